/**
 * Compressed packuments to real clients (issue 17 item 1, "Must show"): npm,
 * pnpm and yarn classic install through the proxy with `Accept-Encoding` as
 * each sends it, and every packument answer they get is coded (br or gzip).
 * A counting TCP relay between client and proxy (bench/scenarios/install-bytes.ts,
 * whose bench prints the bytes) reads the answers as they cross the wire;
 * the upstream is a public Verdaccio holding fixture documents, each with a
 * small tarball for its pinned version. No timing is asserted. A client
 * that is not installed here is skipped with the reason.
 */
import t from 'tap'
import { CountingRelay, clientCommand, installMount, isPackumentAnswer, startInstallUpstream, type ClientName } from '../../bench/scenarios/install-bytes.js'
import { npmInstall } from './npm-client.js'
import { pnpmInstall } from './pnpm-client.js'
import { yarnInstall } from './yarn-client.js'
import type { CliRun } from './run-cli.js'
import { createClientWorkspace, type ClientWorkspace, type RegistryTarget } from './workspace.js'
import { startTestProxy } from '../helpers/proxy.js'

const INSTALLS: Record<ClientName, (ws: ClientWorkspace, target: RegistryTarget) => Promise<CliRun>> = {
  npm: (ws, target) => npmInstall(ws, target),
  pnpm: (ws, target) => pnpmInstall(ws, target),
  yarn: (ws, target) => yarnInstall(ws, target),
}

t.test('npm, pnpm and yarn classic get coded packuments through the proxy and install', async (t) => {
  // Three documents from 0.1 to 4 MB: every one is far above the 1 KiB coding threshold.
  const upstream = await startInstallUpstream(['react', 'express', 'lodash'])
  t.teardown(() => upstream.stop())
  const proxy = await startTestProxy(t, { document: { mounts: installMount(upstream) } })
  const relay = await CountingRelay.start(proxy.port)
  t.teardown(() => relay.close())
  const target = { registry: `${relay.origin}/js/` }

  for (const client of ['npm', 'pnpm', 'yarn'] as const) {
    const command = clientCommand(client)
    t.test(client, { skip: typeof command === 'string' ? false : command.unavailable }, async (t) => {
      const ws = await createClientWorkspace(upstream.dependencies)
      t.teardown(() => ws.remove())
      relay.take()
      await INSTALLS[client](ws, target)
      const wire = relay.take()

      for (const [name, version] of Object.entries(upstream.dependencies)) {
        t.equal((await ws.installedManifest(name)).version, version, `${name}@${version} installed`)
      }
      const packuments = wire.exchanges.filter((e) => isPackumentAnswer(e))
      t.same(new Set(packuments.map((e) => decodeURIComponent(e.path.slice('/js/'.length)))), new Set(Object.keys(upstream.dependencies)), 'every document came through the relay')
      for (const e of packuments) {
        t.match(e.acceptEncoding, /\b(br|gzip)\b/, `${client} offers br or gzip for ${e.path}`)
        t.match(e.contentEncoding, /^(br|gzip)$/, `${e.path} answered ${e.contentEncoding ?? 'identity'}`)
        const offered = (e.acceptEncoding ?? '').split(',').map((c) => c.split(';')[0]?.trim().toLowerCase())
        t.ok(offered.includes(e.contentEncoding), `${e.contentEncoding ?? 'identity'} is a coding ${client} offered`)
      }
      t.comment(`${client}: Accept-Encoding ${[...new Set(packuments.map((e) => e.acceptEncoding))].join(' / ')}; answered ${packuments.map((e) => e.contentEncoding).join(', ')}; ${wire.bytesToClient} B to the client`)
    })
  }
})
