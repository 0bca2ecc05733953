/**
 * `service dredger` as the built binary (dist/; `npm run build` first), with
 * real Verdaccio registries as the mirror target and the private upstream
 * (the private cache), each holding packages of three versions.
 *
 * - `--dry-run` (table and `--json`) lists the revoked version from each
 *   inventory, deletes nothing and exits 0.
 * - A cycle removes that version (document entry and tarball) from both; the
 *   others stay and `npm install` still installs them; a proxy in front
 *   serves neither the packument entry nor the artifact.
 * - `appliesTo: [admission]` removes nothing; widened to both phases with a
 *   full walk, it removes.
 * - The cap: a rule revoking more than the cap halts after the cap with
 *   `/readyz` 503 `halted`; a restart with a narrower rule proceeds.
 * - kill -9 between the two writes of a removal, then a restart: the version
 *   is never left with a tarball that no document names, and the restart
 *   finishes it.
 */
import { execFileSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { request } from 'undici'
import YAML from 'yaml'
import { DREDGER_CYCLE_FINISHED, DREDGER_HALTED, DREDGER_REMOVED } from '../../engine/dredger/dredger.js'
import { DREDGER_STARTED } from '../../server/roles/dredger.js'
import { npmInstall } from '../clients/npm-client.js'
import { createClientWorkspace } from '../clients/workspace.js'
import { freePort } from '../helpers/ports.js'
import { startTestProxy } from '../helpers/proxy.js'
import { runService, type ServiceRun } from '../helpers/service-process.js'
import { publishFixture } from '../peers/publish-fixture.js'
import { startVerdaccio, type VerdaccioPeer } from '../../bench/peers/verdaccio.js'

const [mirror, priv] = await Promise.all([startVerdaccio({ role: 'private' }), startVerdaccio({ role: 'private' })])
t.teardown(() => Promise.all([mirror.stop(), priv.stop()]))
const [mirrorToken, privToken] = await Promise.all([mirror.publisherToken(), priv.publisherToken()])
const dir = await mkdtemp(join(tmpdir(), 'dredger-test-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))

const VERSIONS = ['1.0.0', '1.0.1', '1.0.2']
async function seed(name: string, peers: readonly VerdaccioPeer[] = [mirror, priv]): Promise<void> {
  for (const peer of peers) for (const version of VERSIONS) await publishFixture(peer, { name, version })
}

async function held(peer: VerdaccioPeer, name: string): Promise<string[]> {
  const res = await request(`${peer.origin}/${name}`)
  const text = await res.body.text()
  return res.statusCode === 200 ? Object.keys((JSON.parse(text) as { versions: object }).versions).sort() : []
}

async function tarball(peer: VerdaccioPeer, name: string, version: string): Promise<number> {
  const res = await request(`${peer.origin}/${name}/-/${name}-${version}.tgz`)
  await res.body.dump()
  return res.statusCode
}

interface Options {
  readonly rules: readonly Record<string, unknown>[]
  readonly dredger?: Record<string, unknown>
  /** Default: both inventories. */
  readonly mirrorUrl?: string
  readonly withPrivate?: boolean
}

let configs = 0
async function configFile(port: number, options: Options): Promise<string> {
  const file = join(dir, `config-${++configs}.yaml`)
  const document = {
    server: { host: '127.0.0.1', port },
    runtime: { cores: 1 },
    dredger: { cycleSeconds: 3600, ...options.dredger },
    mounts: {
      js: {
        upstreams: {
          ...(options.withPrivate === false ? {} : { private: { url: priv.url, token: privToken } }),
          public: { url: 'https://upstream.invalid/' },
        },
        mirror: { target: options.mirrorUrl ?? mirror.url, token: mirrorToken },
        rules: options.rules,
      },
    },
  }
  await writeFile(file, YAML.stringify(document))
  return file
}

async function dredger(t: { teardown(fn: () => unknown): void }, options: Options, extra: readonly string[] = []): Promise<{ run: ServiceRun, port: number }> {
  const port = await freePort()
  const run = runService(t, ['dredger', ...extra, '--config', await configFile(port, options)])
  return { run, port }
}
function logLines(run: ServiceRun, message: string): { status: string, data: Record<string, unknown> }[] {
  const lines: { status: string, data: Record<string, unknown> }[] = []
  for (const line of run.stdout().split('\n')) {
    try {
      const entry = JSON.parse(line) as { message?: string, status: string, data: Record<string, unknown> }
      if (entry.message === message) lines.push(entry)
    } catch { /* not a log line */ }
  }
  return lines
}

async function readyz(port: number): Promise<{ status: number, body: { mounts: Record<string, string> } }> {
  const res = await request(`http://127.0.0.1:${port}/readyz`)
  return { status: res.statusCode, body: await res.body.json() as { mounts: Record<string, string> } }
}

async function stop(run: ServiceRun): Promise<void> {
  run.child.kill('SIGTERM')
  await run.exited
}

t.test('dry run lists the revoked version in each inventory and deletes nothing; a cycle removes it', async (t) => {
  await seed('three')
  const rules = [{ rule: 'DenyIdentity', package: 'three', versions: '1.0.1' }, { rule: 'AllowIfOlderThan', seconds: 0 }]

  const table = (await dredger(t, { rules }, ['--dry-run'])).run
  t.equal((await table.exited).code, 0, table.stderr())
  const rows = table.stdout().trim().split('\n')
  t.match(rows[0], /^PACKAGE\s+VERSION\s+INVENTORY\s+RULE$/)
  t.equal(rows.length, 3, table.stdout())
  t.match(rows[1], /^three\s+1\.0\.1\s+mirror_target\s+mounts\.js\.rules\[0\] DenyIdentity three@1\.0\.1$/)
  t.match(rows[2], /^three\s+1\.0\.1\s+private_cache\s+mounts\.js\.rules\[0\] DenyIdentity three@1\.0\.1$/)

  const json = (await dredger(t, { rules }, ['--dry-run', '--json'])).run
  t.equal((await json.exited).code, 0, json.stderr())
  const lines = json.stdout().trim().split('\n').map((line) => JSON.parse(line) as unknown)
  t.same(lines, [
    { mount: 'js', package: 'three', version: '1.0.1', inventory: 'mirror_target', rule: 'mounts.js.rules[0] DenyIdentity three@1.0.1' },
    { mount: 'js', package: 'three', version: '1.0.1', inventory: 'private_cache', rule: 'mounts.js.rules[0] DenyIdentity three@1.0.1' },
  ])
  for (const peer of [mirror, priv]) {
    t.same(await held(peer, 'three'), VERSIONS, 'the dry run deleted nothing')
    t.equal(await tarball(peer, 'three', '1.0.1'), 200)
  }

  const { run, port } = await dredger(t, { rules })
  await run.waitForOutput(DREDGER_CYCLE_FINISHED, 60_000)
  const removed = logLines(run, DREDGER_REMOVED)
  t.same(removed.map((line) => line.status), ['info', 'info'])
  t.same(removed.map((line) => line.data).sort((a, b) => String(a['inventory']).localeCompare(String(b['inventory']))), [
    { mount: 'js', package: 'three', version: '1.0.1', inventory: 'mirror_target', rule: 'mounts.js.rules[0] DenyIdentity three@1.0.1' },
    { mount: 'js', package: 'three', version: '1.0.1', inventory: 'private_cache', rule: 'mounts.js.rules[0] DenyIdentity three@1.0.1' },
  ])
  for (const peer of [mirror, priv]) {
    t.same(await held(peer, 'three'), ['1.0.0', '1.0.2'], 'the document no longer names it, the others stay')
    t.equal(await tarball(peer, 'three', '1.0.1'), 404, 'its tarball is gone')
    t.equal(await tarball(peer, 'three', '1.0.0'), 200)
    t.equal(await tarball(peer, 'three', '1.0.2'), 200)
  }
  t.equal((await readyz(port)).status, 200)
  await stop(run)

  // The others still install from the private registry with the real npm CLI.
  for (const spec of ['1.0.0', '^1.0.0']) {
    const workspace = await createClientWorkspace({ three: spec })
    t.teardown(() => workspace.remove())
    await npmInstall(workspace, { registry: priv.url })
    t.match(await workspace.installedManifest('three'), { version: spec === '1.0.0' ? '1.0.0' : '1.0.2' })
  }

  // A proxy in front (the private registry as its private upstream) serves neither the entry nor the artifact.
  const proxy = await startTestProxy(t, { document: { mounts: { js: { upstreams: { private: { url: priv.url }, public: { url: 'https://upstream.invalid/' } }, rules } } } })
  const packument = await proxy.get('/js/three')
  t.equal(packument.status, 200)
  t.same(Object.keys((packument.json() as { versions: object }).versions).sort(), ['1.0.0', '1.0.2'])
  const artifact = await proxy.get('/js/three/-/three-1.0.1.tgz')
  t.not(artifact.status, 200, `the artifact is not served (${artifact.status})`)
})

t.test('appliesTo [admission] removes nothing; widened to both phases, a full walk removes', async (t) => {
  await seed('adm')
  const narrow = [{ rule: 'DenyIdentity', package: 'adm', versions: '1.0.1', appliesTo: ['admission'] }]
  const dry = (await dredger(t, { rules: narrow }, ['--dry-run', '--json'])).run
  t.equal((await dry.exited).code, 0, dry.stderr())
  t.equal(dry.stdout(), '', 'the dry run lists nothing')
  const first = await dredger(t, { rules: narrow })
  await first.run.waitForOutput(DREDGER_CYCLE_FINISHED, 60_000)
  t.same(logLines(first.run, DREDGER_REMOVED), [])
  await stop(first.run)
  for (const peer of [mirror, priv]) t.same(await held(peer, 'adm'), VERSIONS)

  const wide = [{ rule: 'DenyIdentity', package: 'adm', versions: '1.0.1', appliesTo: ['admission', 'revocation'] }]
  const walk = await dredger(t, { rules: wide, dredger: { fullWalk: true } })
  await walk.run.waitForOutput(DREDGER_CYCLE_FINISHED, 60_000)
  t.match(logLines(walk.run, DREDGER_CYCLE_FINISHED)[0]?.data, { kind: 'full_walk', removed: 2 })
  await stop(walk.run)
  for (const peer of [mirror, priv]) {
    t.same(await held(peer, 'adm'), ['1.0.0', '1.0.2'])
    t.equal(await tarball(peer, 'adm', '1.0.1'), 404)
  }
})

t.test('past the cap nothing more is removed, /readyz is 503 halted; a restart with a narrower rule proceeds', async (t) => {
  await seed('capped')
  const first = await dredger(t, { rules: [{ rule: 'DenyIdentity', package: 'capped', versions: '>=1.0.0' }], dredger: { maxRemovalsPerCycle: 2 } })
  await first.run.waitForOutput(DREDGER_HALTED, 60_000)
  const [halt] = logLines(first.run, DREDGER_HALTED)
  t.match(halt, { status: 'error', data: { cap: 2, count: 6, rule: 'mounts.js.rules[0] DenyIdentity capped@>=1.0.0', mount: 'js' } })
  t.equal(logLines(first.run, DREDGER_REMOVED).length, 2, 'the cap was removed, nothing more')
  const ready = await readyz(first.port)
  t.equal(ready.status, 503)
  t.equal(ready.body.mounts['js'], 'halted')
  t.same(await held(mirror, 'capped'), ['1.0.2'], 'the first two went from the mirror target')
  t.same(await held(priv, 'capped'), VERSIONS, 'the private cache was left alone past the cap')
  await stop(first.run)

  const second = await dredger(t, { rules: [{ rule: 'DenyIdentity', package: 'capped', versions: '1.0.2' }], dredger: { maxRemovalsPerCycle: 2 } })
  await second.run.waitForOutput(DREDGER_CYCLE_FINISHED, 60_000)
  t.same(logLines(second.run, DREDGER_HALTED), [])
  t.equal(logLines(second.run, DREDGER_REMOVED).length, 2)
  t.equal((await readyz(second.port)).status, 200)
  t.same(await held(mirror, 'capped'), [])
  t.same(await held(priv, 'capped'), ['1.0.0', '1.0.1'])
  await stop(second.run)
})

/** A relay to the mirror registry that, while `hold` is set, keeps every document PUT unanswered. */
async function relay(target: VerdaccioPeer): Promise<{ url: string, server: Server, held: Promise<void>, release(): void }> {
  let hold = true
  let sawHeld: () => void = () => {}
  const heldOnce = new Promise<void>((resolve) => { sawHeld = resolve })
  const parked: IncomingMessage[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      if (hold && req.method === 'PUT') {
        parked.push(req)
        sawHeld()
        return
      }
      const headers: Record<string, string> = {}
      for (const name of ['authorization', 'content-type', 'accept']) if (typeof req.headers[name] === 'string') headers[name] = req.headers[name]
      void request(`${target.origin}${req.url ?? '/'}`, { method: req.method as 'GET', headers, ...(chunks.length === 0 ? {} : { body: Buffer.concat(chunks) }) }).then(async (upstream) => {
        const body = Buffer.from(await upstream.body.arrayBuffer())
        res.writeHead(upstream.statusCode, { 'content-type': String(upstream.headers['content-type'] ?? 'application/json') })
        res.end(body)
      }, (error: Error) => { res.writeHead(502); res.end(error.message) })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address() as { port: number }
  return { url: `http://127.0.0.1:${address.port}/`, server, held: heldOnce, release: () => { hold = false } }
}

t.test('kill -9 between the two writes of a removal, fails closed (its bytes are not served), and a restart finishes it', async (t) => {
  await seed('crash', [mirror])
  const front = await relay(mirror)
  t.teardown(() => new Promise<void>((resolve) => { front.server.closeAllConnections(); front.server.close(() => resolve()) }))
  const rules = [{ rule: 'DenyIdentity', package: 'crash', versions: '1.0.1' }]
  const first = await dredger(t, { rules, mirrorUrl: front.url, withPrivate: false })
  await front.held
  // The role process is the launcher's child: kill it, not the launcher, so nothing runs after the signal.
  const rolePid = Number(execFileSync('ps', ['-o', 'pid=', '--ppid', String(first.run.child.pid)]).toString().trim().split('\n')[0])
  t.ok(rolePid > 0)
  process.kill(rolePid, 'SIGKILL')
  await first.run.exited
  t.same(logLines(first.run, DREDGER_REMOVED), [], 'killed inside the removal')
  // Fail closed: the tarball went first, so no tarball is left that no document names.
  // (Verdaccio answers 500, not 404, for a tarball its document still names: either way, not served.)
  const left = await tarball(mirror, 'crash', '1.0.1')
  t.not(left, 200, `the tarball is not served (${left})`)
  t.same(await held(mirror, 'crash'), VERSIONS, 'the document still names it, so the restart finds it')

  front.release()
  const second = await dredger(t, { rules, mirrorUrl: front.url, withPrivate: false })
  await second.run.waitForOutput(DREDGER_CYCLE_FINISHED, 60_000)
  t.equal(logLines(second.run, DREDGER_REMOVED).length, 1)
  t.same(await held(mirror, 'crash'), ['1.0.0', '1.0.2'])
  t.equal(await tarball(mirror, 'crash', '1.0.1'), 404)
  t.equal(await tarball(mirror, 'crash', '1.0.0'), 200)
  await stop(second.run)
})

t.test('the dredger logs its start with the inventories', async (t) => {
  const { run } = await dredger(t, { rules: [] })
  await run.waitForOutput(DREDGER_STARTED)
  t.match(logLines(run, DREDGER_STARTED)[0]?.data, { mounts: { js: [`mirror_target 127.0.0.1:${mirror.port}`, `private_cache 127.0.0.1:${priv.port}`] }, cycleSeconds: 3600, maxRemovalsPerCycle: 100, fullWalk: false })
  await stop(run)
})
