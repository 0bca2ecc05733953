/**
 * The npm audit view (issue 32 item 1, merge.ts Decide.affected): withheld
 * versions an advisory affects are listed, marked `deprecated`, so npm
 * computes the finding's range over them; a withheld version no advisory
 * affects is left out, because npm picks its fix from the listed versions
 * outside the reported ranges and would pick that one, then get the
 * artifact route's 403. Without a database (no `affected`), every withheld
 * version is listed as before.
 */
import t from 'tap'
import semver from 'semver'
import { runPackumentPipeline } from '../../engine/packument/pipeline.js'
import type { Decide } from '../../engine/packument/merge.js'
import { chunked, decision, packument, utf8 } from './helpers.js'

const BASE = 'http://proxy.test:4873'
const VULNERABLE = '<4.17.21'

/** The lodash case: 4.17.20 vulnerable (withheld by DenyIfCve), 4.17.21 the fix, 4.18.0 withheld by another rule (too new). */
const versions = ['4.17.19', '4.17.20', '4.17.21', '4.18.0']
const withheld = new Set(['4.17.20', '4.18.0'])
const gate = (withAffected: boolean, fixWithheld = false): Decide => {
  const decide = (facts: { version: string }) => (withheld.has(facts.version) || (fixWithheld && facts.version === '4.17.21') ? decision('deny') : decision('admit'))
  return withAffected ? Object.assign(decide, { affected: (_name: string, version: string) => semver.satisfies(version, VULNERABLE) }) : decide
}

function auditView(decide: Decide): { versions: Record<string, { deprecated?: string }>, 'dist-tags': Record<string, string> } {
  const outcome = runPackumentPipeline({ packageName: 'lodash', baseUrl: BASE, abbreviated: false, decide, listWithheld: true }, undefined, chunked(utf8(JSON.stringify(packument('lodash', versions))), 97))
  if (outcome.body === undefined) throw new Error('no body')
  return JSON.parse(Buffer.from(outcome.body).toString('utf8'))
}

t.test('a withheld version an advisory affects is listed; one no advisory affects is not', async (t) => {
  const view = auditView(gate(true))
  t.same(Object.keys(view.versions), ['4.17.19', '4.17.20', '4.17.21'])
  t.match(view.versions['4.17.20']?.deprecated, /^withheld by policy: /)
  t.equal(view.versions['4.17.21']?.deprecated, undefined, 'the admitted fix, as it is')
  t.equal(view['dist-tags']['latest'], '4.17.21')
  const fix = semver.maxSatisfying(Object.keys(view.versions).filter((v) => view.versions[v]?.deprecated === undefined && !semver.satisfies(v, VULNERABLE)), '^4.17.20')
  t.equal(fix, '4.17.21', 'the fix npm would pick is admitted')
})

t.test('when every fixed version is withheld, none is listed: npm reports no fix rather than one it cannot install', async (t) => {
  const view = auditView(gate(true, true))
  t.same(Object.keys(view.versions), ['4.17.19', '4.17.20'])
  t.notOk(Object.keys(view.versions).some((v) => !semver.satisfies(v, VULNERABLE) && semver.satisfies(v, '^4.17.20')), 'no listed version fixes 4.17.20')
})

t.test('without a database, every withheld version is listed', async (t) => {
  const view = auditView(gate(false))
  t.same(Object.keys(view.versions), versions)
  t.match(view.versions['4.18.0']?.deprecated, /^withheld by policy: /)
})
