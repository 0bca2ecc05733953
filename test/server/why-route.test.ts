/**
 * The why route's answer names the rule its message names (issue 32 item 6):
 * a version no rule admits yet, which a quarantine will admit, answers that
 * quarantine's kind, position and `quarantine`, not `rule: null, reason:
 * default` beside a message naming `AllowIfOlderThan (rule 2)`.
 */
import t from 'tap'
import { DAY, HOUR, startHistoryUpstream } from '../helpers/fixture-manifest.js'

t.test('a quarantined version: the why route names the quarantine its message names', async (t) => {
  const peer = await startHistoryUpstream(t)
  const { at, manifest } = peer
  peer.serve('fresh-pkg', '1.1.0', { '1.0.0': manifest('fresh-pkg', '1.0.0'), '1.1.0': manifest('fresh-pkg', '1.1.0') }, { '1.0.0': at(30 * DAY), '1.1.0': at(HOUR) })
  const proxy = await peer.proxy([
    { rule: 'DenyIfTrustDowngrade', packages: ['other-*'] },
    { rule: 'AllowIfOlderThan', seconds: 7 * 86_400 },
  ])

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
  const peer = await startHistoryUpstream(t)
  peer.serve('lone-pkg', '1.0.0', { '1.0.0': peer.manifest('lone-pkg', '1.0.0') }, { '1.0.0': peer.at(30 * DAY) })
  const proxy = await peer.proxy([{ rule: 'AllowIfOlderThan', seconds: 86_400 }])
  const unknown = await proxy.get('/js/-/why/lone-pkg/9.9.9')
  t.equal(unknown.status, 404)
  const error = (unknown.json() as { error: string }).error
  t.match(error, /^lone-pkg@9\.9\.9 is in no public document this proxy can see, so no rule judges it here/)
  t.notMatch(error, /a private version is served/, 'no claim that the version is private')
})
