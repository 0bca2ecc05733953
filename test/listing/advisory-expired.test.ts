/**
 * One wording for a push past its maximum age (SPEC.md 3.5, 7.1: "the
 * message states the age and the maximum"), whoever refuses: a listing
 * nothing survived, a public artifact, and the npm audit answer all build it
 * with engine/errors.ts advisoryExpired.
 */
import t from 'tap'
import { advisoryExpired, ERROR_TABLE } from '../../engine/errors.js'
import { withholdingError } from '../../engine/listing/withholding.js'
import { refusalOf } from '../../server/routes/artifact-answers.js'
import { decision } from '../helpers/decisions.js'

t.test('the age and the maximum, in whole seconds', async (t) => {
  const error = advisoryExpired(700000.75, 518400)
  t.equal(error.code, 'ADVISORY_EXPIRED')
  t.equal(error.status, 503)
  t.equal(error.retryAfter, ERROR_TABLE.ADVISORY_EXPIRED.retryAfter)
  t.equal(error.message, 'the advisory database is older than its maximum age: age 700000 s, maximum 518400 s')
  t.same(error.data, { ageSeconds: 700000.75, maxAgeSeconds: 518400 })
})

t.test('a push with no publication time says so', async (t) => {
  t.equal(advisoryExpired(undefined, 518400).message, 'the advisory database is older than its maximum age: its publication time is unknown, maximum 518400 s')
  t.equal(advisoryExpired(undefined, undefined).message, ERROR_TABLE.ADVISORY_EXPIRED.message, 'nothing known: the table\'s own text')
})

t.test('a listing and an artifact refuse in the same words', async (t) => {
  const expected = advisoryExpired(700000, 518400).message
  t.equal(withholdingError({ code: 'ADVISORY_EXPIRED', ageSeconds: 700000, maxAgeSeconds: 518400 })?.message, expected)
  t.equal(refusalOf(decision('expired', { ageSeconds: 700000, maxAgeSeconds: 518400 }))?.message, expected)
})
