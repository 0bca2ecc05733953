import t from 'tap'
import { newestSurvivingVersion, newestVersionIndex } from '../../engine/packument/latest.js'

t.test('the newest release wins over newer prereleases', async (t) => {
  t.equal(newestSurvivingVersion(['1.0.0', '1.10.0', '1.9.0', '2.0.0-rc.1', '2.0.0-dev.20260101']), '1.10.0', 'numeric, not string, order')
  t.equal(newestSurvivingVersion(['1.0.0', '1.0.1+build.7', '1.0.0+zzz']), '1.0.1+build.7', 'build metadata is a release')
  t.equal(newestSurvivingVersion(['2.0.0', '10.0.0', '9.99.99']), '10.0.0')
  t.equal(newestSurvivingVersion(['1.0.0', '1.0.1+b-2', '1.0.2-rc.1']), '1.0.1+b-2', 'a hyphen in build metadata does not make a prerelease')
})

t.test('only prereleases: the newest prerelease', async (t) => {
  t.equal(newestSurvivingVersion(['2.0.0-beta.1', '2.0.0-beta.10', '2.0.0-beta.2']), '2.0.0-beta.10')
})

t.test('nothing valid: undefined', async (t) => {
  t.equal(newestSurvivingVersion([]), undefined)
  t.equal(newestSurvivingVersion(['latest', '01.0.0', 'x.y.z']), undefined)
  t.equal(newestSurvivingVersion(['01.2.3', '1.2.3']), '1.2.3', 'a leading zero is not semver')
})

t.test('newestVersionIndex: semver precedence, prereleases included (the newest withheld version a notice names)', async (t) => {
  t.equal(newestVersionIndex(['4.4.3', '4.4.10', '4.4.9']), 1, 'numeric, not text order')
  t.equal(newestVersionIndex(['7.1.0-dev.20261021.1', '7.1.0-dev.20261022.1', '5.8.0-dev.20250130', '7.0.2']), 1, 'the newest line\'s newest nightly')
  t.equal(newestVersionIndex(['2.0.0-rc.1', '2.0.0', '1.9.9']), 1, 'a release above its own prereleases')
  t.equal(newestVersionIndex(['1.0.0', 'not-semver']), 0)
  t.equal(newestVersionIndex(['not-semver', 'v1']), undefined)
  t.equal(newestVersionIndex([]), undefined)
})
