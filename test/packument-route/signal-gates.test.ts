/**
 * DenyIfInstallScriptChanged and DenyIfDependencyAdded through the built
 * proxy (issue 31 item 5), against a scripted https upstream serving fixture
 * histories: a rewritten postinstall and a new dependency (in a backport,
 * compared with the right previous version) are withheld from the packument
 * in both forms and refused by the artifact route with a sentence naming
 * what changed since which version; the why route answers the same with the
 * facts it read; a version past the quarantine is admitted (the rule
 * abstains); a version without a publish time stays withheld; each withheld
 * version is counted once per signal however often it is refused.
 */
import t from 'tap'
import { SNAPSHOT_KEYS } from '../../engine/telemetry/snapshot-keys.js'
import { DAY, HOUR, startHistoryUpstream } from '../helpers/fixture-manifest.js'

t.test('the two signals through the proxy', async (t) => {
  const peer = await startHistoryUpstream(t)
  const { at } = peer
  const serve = (name: string, latest: string, versions: Record<string, Record<string, unknown>>, time: Record<string, string>): void =>
    peer.serve(name, latest, Object.fromEntries(Object.entries(versions).map(([v, extra]) => [v, peer.manifest(name, v, extra)])), time)
  // A postinstall that already existed, rewritten an hour ago; an older rewrite is past its quarantine.
  serve('hook-pkg', '1.1.0', {
    '1.0.0': { scripts: { test: 'tap', postinstall: 'node setup.js' } },
    '1.1.0': { scripts: { test: 'tap --bail', postinstall: 'node setup.js --quiet' } },
    '1.2.0': { scripts: { test: 'tap --bail', postinstall: 'node setup.js --quiet; node -e "fetch(1)"' } },
  }, { '1.0.0': at(30 * DAY), '1.1.0': at(20 * DAY), '1.2.0': at(HOUR) })
  // A backport that brings a brand-new dependency, a patch of the newer line that does not, and a version without a time.
  serve('dep-pkg', '2.0.1', {
    '1.0.0': { dependencies: { a: '^1.0.0' } },
    '2.0.0': { dependencies: { a: '^1.0.0', b: '^1.0.0' }, devDependencies: { tap: '^18' } },
    '1.0.1': { dependencies: { a: '^1.0.0', 'plain-crypto-js': '^4.2.1' } },
    '2.0.1': { dependencies: { a: '^1.0.0', b: '^1.1.0' } },
    '2.1.0': { dependencies: { a: '^1.0.0', b: '^1.1.0' }, optionalDependencies: { c: '^1.0.0' } },
  }, { '1.0.0': at(30 * DAY), '2.0.0': at(20 * DAY), '1.0.1': at(2 * HOUR), '2.0.1': at(HOUR) })

  const proxy = await peer.proxy([
    { rule: 'DenyIfInstallScriptChanged', seconds: 86_400 },
    { rule: 'DenyIfDependencyAdded', seconds: 86_400 },
    { rule: 'AllowIfOlderThan', seconds: 0 },
  ])

  t.equal((await proxy.get('/readyz')).status, 200, 'ready at once: neither rule needs an advisory database')

  for (const accept of ['application/json', 'application/vnd.npm.install-v1+json']) {
    const hook = await proxy.get('/js/hook-pkg', { accept })
    t.equal(hook.status, 200)
    t.same(Object.keys((hook.json() as { versions: object }).versions).sort(), ['1.0.0', '1.1.0'], `${accept}: the rewritten postinstall is in quarantine; the older rewrite is past it`)
    const dep = await proxy.get('/js/dep-pkg', { accept })
    t.same(Object.keys((dep.json() as { versions: object }).versions).sort(), ['1.0.0', '2.0.0', '2.0.1'], `${accept}: the backport's new dependency and the version without a time are withheld`)
  }

  const hook = await proxy.get('/js/hook-pkg/-/hook-pkg-1.2.0.tgz')
  t.equal(hook.status, 403, 'the artifact route refuses the same version, from the selected-version record')
  t.match((hook.json() as { error: string }).error, /hook-pkg@1\.2\.0 rewrites its postinstall script since 1\.1\.0: published .*DenyIfInstallScriptChanged \(rule 1\) withholds such versions until they are 1 day old, so until /)
  const backport = await proxy.get('/js/dep-pkg/-/dep-pkg-1.0.1.tgz')
  t.equal(backport.status, 403)
  t.match((backport.json() as { error: string }).error, /dep-pkg@1\.0\.1 adds a dependency plain-crypto-js that 1\.0\.0 did not have: published .*DenyIfDependencyAdded \(rule 2\)/)
  const untimed = await proxy.get('/js/dep-pkg/-/dep-pkg-2.1.0.tgz')
  t.equal(untimed.status, 403)
  t.match((untimed.json() as { error: string }).error, /dep-pkg@2\.1\.0 adds a dependency c that 2\.0\.1 did not have; withheld by DenyIfDependencyAdded \(rule 2\), and the public registry gives no publish time for it, so its quarantine never ends/)

  const whyHook = await proxy.get('/js/-/why/hook-pkg/1.2.0')
  t.equal(whyHook.status, 200)
  const hookAnswer = whyHook.json() as Record<string, unknown>
  t.match(hookAnswer, {
    verdict: 'deny',
    rule: 'DenyIfInstallScriptChanged',
    ruleNumber: 1,
    reason: 'install_script_changed',
    evidence: ['postinstall changed since 1.1.0'],
    installScriptChange: { since: '1.1.0', added: [], changed: ['postinstall'] },
    dependencyAddition: null,
  })
  t.equal(hookAnswer['admittedFrom'], new Date(Date.parse(at(HOUR)) + DAY).toISOString(), 'when the quarantine ends')
  t.match((await proxy.get('/js/-/why/hook-pkg/1.1.0')).json(), { verdict: 'admit', rule: 'AllowIfOlderThan' }, 'a rewrite past its quarantine: the rule abstains')

  t.match((await proxy.get('/js/-/why/dep-pkg/1.0.1')).json(), {
    verdict: 'deny',
    rule: 'DenyIfDependencyAdded',
    ruleNumber: 2,
    reason: 'dependency_added',
    evidence: ['dependency plain-crypto-js added since 1.0.0'],
    dependencyAddition: { since: '1.0.0', names: ['plain-crypto-js'] },
    installScriptChange: null,
  })
  t.match((await proxy.get('/js/-/why/dep-pkg/2.0.1')).json(), { verdict: 'admit', dependencyAddition: null }, 'compared with 2.0.0, not with the backport published after it')
  t.match((await proxy.get('/js/-/why/dep-pkg/2.1.0')).json(), { verdict: 'deny', publishedAt: null, admittedFrom: null, dependencyAddition: { since: '2.0.1', names: ['c'] } })

  // Listings in two forms, artifacts and why answers refused each version several times: counted once each.
  const policy = proxy.role.metrics()[SNAPSHOT_KEYS.policy] as { signalWithholdings: Record<string, Record<string, number>> }
  t.same(policy.signalWithholdings['js'], { install_script_changed: 1, dependency_added: 2 })
})
