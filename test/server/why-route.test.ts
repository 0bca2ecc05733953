/**
 * The why route's answer names the rule its message names (issue 32 item 6):
 * a version no rule admits yet, which a quarantine will admit, answers that
 * quarantine's kind, position and `quarantine`, not `rule: null, reason:
 * default` beside a message naming `AllowIfOlderThan (rule 2)`.
 */
import t from 'tap'
import { makeTestCa } from '../../bench/peers/tls.js'
import { startMisbehavingUpstream } from '../peers/misbehaving-upstream.js'
import { startTestProxy } from '../helpers/proxy.js'

const HOUR = 3_600_000
const DAY = 24 * HOUR

t.test('a quarantined version: the why route names the quarantine its message names', async (t) => {
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const upstream = await startMisbehavingUpstream({ tls: ca })
  t.teardown(() => upstream.stop())
  const now = Date.now()
  const at = (ms: number): string => new Date(now - ms).toISOString()
  const manifest = (version: string): Record<string, unknown> => ({
    name: 'fresh-pkg',
    version,
    dist: { integrity: `sha512-${Buffer.from(version.padEnd(64, '.')).toString('base64')}`, tarball: `${upstream.origin}/fresh-pkg/-/fresh-pkg-${version}.tgz` },
  })
  upstream.script('/fresh-pkg', {
    kind: 'respond',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'fresh-pkg',
      'dist-tags': { latest: '1.1.0' },
      versions: { '1.0.0': manifest('1.0.0'), '1.1.0': manifest('1.1.0') },
      time: { created: at(40 * DAY), modified: at(HOUR), '1.0.0': at(30 * DAY), '1.1.0': at(HOUR) },
    }),
  })
  const proxy = await startTestProxy(t, {
    document: {
      mounts: {
        js: {
          upstreams: { public: { url: `${upstream.origin}/`, caFile: ca.caFile, allowInternalRanges: ['127.0.0.0/8'] } },
          rules: [
            { rule: 'DenyIfTrustDowngrade', packages: ['other-*'] },
            { rule: 'AllowIfOlderThan', seconds: 7 * 86_400 },
          ],
        },
      },
    },
  })

  const why = await proxy.get('/js/-/why/fresh-pkg/1.1.0')
  t.equal(why.status, 200)
  const answer = why.json() as Record<string, unknown>
  t.match(answer['message'], /is in quarantine: .*AllowIfOlderThan \(rule 2\) admits versions 7 days old/)
  t.match(answer, { verdict: 'deny', rule: 'AllowIfOlderThan', ruleNumber: 2, reason: 'quarantine' }, 'the rule the message names')
  t.equal(answer['admittedFrom'], new Date(Date.parse(at(HOUR)) + 7 * DAY).toISOString())
  const admitted = await proxy.get('/js/-/why/fresh-pkg/1.0.0')
  t.match(admitted.json(), { verdict: 'admit', rule: 'AllowIfOlderThan', ruleNumber: 2 }, 'an admitted version still names the rule that admitted it')
})

t.test('a version in no public document: the 404 says so, and does not call it private', async (t) => {
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const upstream = await startMisbehavingUpstream({ tls: ca })
  t.teardown(() => upstream.stop())
  upstream.script('/lone-pkg', {
    kind: 'respond',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'lone-pkg', 'dist-tags': { latest: '1.0.0' }, versions: { '1.0.0': { name: 'lone-pkg', version: '1.0.0', dist: { tarball: `${upstream.origin}/lone-pkg/-/lone-pkg-1.0.0.tgz` } } }, time: { '1.0.0': new Date(Date.now() - 30 * DAY).toISOString() } }),
  })
  const proxy = await startTestProxy(t, {
    document: { mounts: { js: { upstreams: { public: { url: `${upstream.origin}/`, caFile: ca.caFile, allowInternalRanges: ['127.0.0.0/8'] } }, rules: [{ rule: 'AllowIfOlderThan', seconds: 86_400 }] } } },
  })
  const unknown = await proxy.get('/js/-/why/lone-pkg/9.9.9')
  t.equal(unknown.status, 404)
  const error = (unknown.json() as { error: string }).error
  t.match(error, /^lone-pkg@9\.9\.9 is in no public document this proxy can see, so no rule judges it here/)
  t.notMatch(error, /a private version is served/, 'no claim that the version is private')
})
