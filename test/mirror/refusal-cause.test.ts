/**
 * The reason a mirror target gives with a refusal (engine/mirror/refusal-cause.ts),
 * as the `mirror publication refused` error line names it: the registry's
 * JSON member or the page's text, one bounded line, the credential redacted.
 */
import { Readable } from 'node:stream'
import t from 'tap'
import type { Dispatcher } from 'undici'
import { CAUSE_MAX_CHARS, refusalCause } from '../../engine/mirror/refusal-cause.js'

function body(...parts: string[]): Dispatcher.ResponseData['body'] {
  return Readable.from(parts.map((p) => Buffer.from(p))) as unknown as Dispatcher.ResponseData['body']
}

t.test('the registry\'s JSON reason, else the text without markup', async (t) => {
  t.equal(await refusalCause(body('{"error":"this package is already present"}'), []), 'this package is already present')
  t.equal(await refusalCause(body('{"message":"version exists"}'), []), 'version exists')
  t.equal(await refusalCause(body('<html><body><h1>Conflict</h1> file exists</body></html>'), []), 'Conflict file exists')
  t.equal(await refusalCause(body(''), []), undefined, 'an empty body gives no reason')
})

t.test('one bounded line: control characters become spaces, long reasons are cut', async (t) => {
  t.equal(await refusalCause(body('{"error":"bad\\nlevel=error forged"}'), []), 'bad level=error forged')
  const long = await refusalCause(body('x'.repeat(5000)), [])
  t.equal(long?.length, CAUSE_MAX_CHARS)
  t.ok(long?.endsWith('…'))
})

t.test('a reason that echoes the credential has it redacted', async (t) => {
  t.equal(await refusalCause(body('{"error":"token s3cret-token is not allowed"}'), ['s3cret-token', '']), 'token <redacted> is not allowed')
})
