/**
 * DenyIfTrustDowngrade and DenyIfInstallScriptAdded through the built proxy
 * (issue 17 item 6), against a scripted https upstream serving fixture
 * histories: the packument withholds the versions, the artifact route
 * refuses the same versions (gating from the selected-version record, with
 * no document), with a 403 sentence naming the cause, the why route answers
 * the decision with the facts it read, and the mount is ready at once (these
 * rules read no advisory database).
 */
import t from 'tap'
import { DAY, HOUR, startHistoryUpstream } from '../helpers/fixture-manifest.js'

t.test('history gates through the proxy', async (t) => {
  const peer = await startHistoryUpstream(t)
  const { at, manifest, upstream } = peer
  const provenance = { attestations: { url: `${upstream.origin}/attestations`, provenance: { predicateType: 'https://slsa.dev/provenance/v1' } } }
  peer.serve('prov-pkg', '1.2.0', {
    '1.0.0': manifest('prov-pkg', '1.0.0'),
    '1.1.0': manifest('prov-pkg', '1.1.0', {}, provenance),
    '1.2.0': manifest('prov-pkg', '1.2.0'),
  }, { '1.0.0': at(30 * DAY), '1.1.0': at(20 * DAY), '1.2.0': at(10 * DAY) }, 10 * DAY)
  peer.serve('script-pkg', '1.1.0', {
    '1.0.0': manifest('script-pkg', '1.0.0'),
    '1.1.0': manifest('script-pkg', '1.1.0', { scripts: { postinstall: 'node steal.js' } }),
  }, { '1.0.0': at(30 * DAY), '1.1.0': at(HOUR) })

  const proxy = await peer.proxy([
    { rule: 'DenyIfTrustDowngrade', packages: ['prov-*'] },
    { rule: 'DenyIfInstallScriptAdded', seconds: 86_400 },
    { rule: 'AllowIfOlderThan', seconds: 0 },
  ])

  const ready = await proxy.get('/readyz')
  t.equal(ready.status, 200, 'ready at once: neither rule needs an advisory database')

  for (const accept of ['application/json', 'application/vnd.npm.install-v1+json']) {
    const prov = await proxy.get('/js/prov-pkg', { accept })
    t.equal(prov.status, 200)
    t.same(Object.keys((prov.json() as { versions: object }).versions).sort(), ['1.0.0', '1.1.0'], `${accept}: the downgrade 1.2.0 is withheld`)
    const script = await proxy.get('/js/script-pkg', { accept })
    t.same(Object.keys((script.json() as { versions: object }).versions), ['1.0.0'], `${accept}: the added postinstall is in quarantine`)
  }

  const downgraded = await proxy.get('/js/prov-pkg/-/prov-pkg-1.2.0.tgz')
  t.equal(downgraded.status, 403, 'the artifact route refuses the same version')
  t.match((downgraded.json() as { error: string }).error, /prov-pkg@1\.2\.0 is published with less trust than an earlier version.*1\.1\.0 with a provenance attestation/)
  const added = await proxy.get('/js/script-pkg/-/script-pkg-1.1.0.tgz')
  t.equal(added.status, 403)
  t.match((added.json() as { error: string }).error, /adds an install script .* 1\.0\.0 did not have.*until /)

  const why = await proxy.get('/js/-/why/prov-pkg/1.2.0')
  t.equal(why.status, 200)
  t.match(why.json(), {
    verdict: 'deny',
    rule: 'DenyIfTrustDowngrade',
    ruleNumber: 1,
    reason: 'trust_downgrade',
    evidence: ['trust: no trust evidence', 'earlier: 1.1.0 with a provenance attestation'],
    trust: 'none',
    earlierTrust: { level: 'provenance', version: '1.1.0' },
  })
  const whyScript = await proxy.get('/js/-/why/script-pkg/1.1.0')
  const answer = whyScript.json() as Record<string, unknown>
  t.match(answer, { verdict: 'deny', rule: 'DenyIfInstallScriptAdded', ruleNumber: 2, installScript: true, installScriptAddedAfter: '1.0.0' })
  t.equal(answer['admittedFrom'], new Date(Date.parse(at(HOUR)) + DAY).toISOString(), 'when the quarantine ends')
  const whyAdmitted = await proxy.get('/js/-/why/script-pkg/1.0.0')
  t.match(whyAdmitted.json(), { verdict: 'admit', rule: 'AllowIfOlderThan', installScript: false, installScriptAddedAfter: null })
})
