/**
 * The real pip through the proxy's `/py` mount while its upstream
 * connections leave through a real CONNECT forward proxy on 127.0.0.1
 * (issue 32 item 3): the public PEP 691 index (https) is read through the
 * tunnel, project page and wheel both, at the judged address.
 */
import t from 'tap'
import { createPipWorkspace, pipInstall } from '../clients/pip-client.js'
import { startTestProxy } from '../helpers/proxy.js'
import { startFixtureIndex } from '../pypi/fixture-index.js'
import { startConnectProxy } from '../upstream/connect-proxy.js'

t.test('pip installs through a forward proxy', async (t) => {
  const pub = await startFixtureIndex(t, { mode: 'json', https: true, projects: [{ name: 'markupsafe', releases: [{ version: '2.1.5' }] }] })
  const forward = await startConnectProxy(t)
  const proxy = await startTestProxy(t, {
    document: {
      mounts: {
        py: {
          upstreams: { public: { url: pub.simpleUrl, caFile: pub.caFile, allowInternalRanges: ['127.0.0.0/8'] } },
          rules: [{ rule: 'AllowIfOlderThan', seconds: 0 }],
        },
      },
    },
    env: { https_proxy: forward.url },
  })
  const ws = await createPipWorkspace(t)
  const run = await pipInstall(ws, { indexUrl: `${proxy.url}/py/simple/` }, ['markupsafe'], { timeoutMs: 60_000 })
  t.same(run.installed, [{ name: 'markupsafe', version: '2.1.5' }])
  t.ok(pub.fileRequests().includes('markupsafe-2.1.5-py3-none-any.whl'), 'the public index served the wheel')
  t.ok(forward.targets.length >= 2, `tunnels opened: ${forward.targets.length} (documents and artifacts)`)
  t.same([...new Set(forward.targets)], [new URL(pub.simpleUrl).host], 'every tunnel to the public index')
})
