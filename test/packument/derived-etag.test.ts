import t from 'tap'
import { isStrongEtag } from '../../engine/packument/derived-etag.js'
import { runPackumentPipeline, type PackumentRequest } from '../../engine/packument/pipeline.js'
import { strongEtag } from '../../engine/packument/render.js'
import { admitAll, admitWhen, packument, utf8 } from './helpers.js'

const BASE = 'http://proxy.test:4873'
const priv = utf8(JSON.stringify(packument('p', ['0.1.0'])))
const pub = utf8(JSON.stringify(packument('p', ['1.0.0', '1.1.0', '2.0.0'])))

function run(extra: Partial<PackumentRequest>, withPrivate = true): { body: Uint8Array; etag: string } {
  const outcome = runPackumentPipeline(
    { packageName: 'p', baseUrl: BASE, abbreviated: false, decide: admitAll, privateEtag: '"priv-1"', publicEtag: '"pub-1"', ...extra },
    withPrivate ? [priv] : undefined,
    [pub],
  )
  return { body: outcome.body!, etag: outcome.etag! }
}

t.test('strong and weak upstream tags', async (t) => {
  t.ok(isStrongEtag('"abc"'))
  t.ok(isStrongEtag('""'))
  t.notOk(isStrongEtag('W/"abc"'), 'weak')
  t.notOk(isStrongEtag('abc'), 'unquoted')
  t.notOk(isStrongEtag('"a"b"'), 'a quote inside')
  t.notOk(isStrongEtag(undefined))
})

t.test('with strong upstream tags the tag is derived from the inputs, and names the bytes', async (t) => {
  const derived = run({})
  t.ok(derived.etag.startsWith('"d'), 'derived')
  t.not(derived.etag, strongEtag(derived.body), 'not a hash of the body')
  const hashed = run({ privateEtag: undefined, publicEtag: undefined })
  t.same(Buffer.from(hashed.body), Buffer.from(derived.body), 'the same body either way')
  t.equal(hashed.etag, strongEtag(hashed.body), 'no upstream tags: the body is hashed')
  t.equal(run({}).etag, derived.etag, 'the same inputs give the same tag')

  // Every input that can change the bytes changes the tag.
  const others = {
    'a public upstream tag': run({ publicEtag: '"pub-2"' }),
    'a private upstream tag': run({ privateEtag: '"priv-2"' }),
    'the kept versions': run({ decide: admitWhen((f) => f.version !== '1.1.0') }),
    'the form': run({ abbreviated: true }),
    'the base URL': run({ baseUrl: 'http://other.test' }),
    'the private document being absent': run({}, false),
  }
  for (const [what, other] of Object.entries(others)) t.not(other.etag, derived.etag, what)
})

t.test('a weak or missing tag on a present document falls back to hashing', async (t) => {
  for (const extra of [{ publicEtag: 'W/"pub-1"' }, { privateEtag: undefined }, { publicEtag: 'pub-1' }]) {
    const outcome = run(extra)
    t.equal(outcome.etag, strongEtag(outcome.body), JSON.stringify(extra))
  }
  const publicOnly = run({ privateEtag: undefined }, false)
  t.ok(publicOnly.etag.startsWith('"d'), 'an absent document needs no tag')
})
