/**
 * `service dredger` cycles against real Verdaccio registries (dredger-rig.ts;
 * the dry run and the first removal are in dredger-service.test.ts):
 *
 * - `appliesTo: [admission]` removes nothing; widened to both phases with a
 *   full walk, it removes.
 * - The cap: a rule revoking more than the cap halts after the cap with
 *   `/readyz` 503 `halted`; a restart with a narrower rule proceeds.
 * - kill -9 between the two writes of a removal, then a restart: the version
 *   is never left with a tarball that no document names, and the restart
 *   finishes it.
 */
import { execFileSync } from 'node:child_process'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import t from 'tap'
import { request } from 'undici'
import { DREDGER_CYCLE_FINISHED, DREDGER_HALTED, DREDGER_REMOVED } from '../../engine/dredger/dredger.js'
import type { VerdaccioPeer } from '../../bench/peers/verdaccio.js'
import { DredgerRig, held, logLines, readyz, stop, tarball, VERSIONS } from './dredger-rig.js'

const rig = await DredgerRig.start(t)

t.test('appliesTo [admission] removes nothing; widened to both phases, a full walk removes', async (t) => {
  await rig.seed('adm')
  const narrow = [{ rule: 'DenyIdentity', package: 'adm', versions: '1.0.1', appliesTo: ['admission'] }]
  const dry = (await rig.dredger(t, { rules: narrow }, ['--dry-run', '--json'])).run
  t.equal((await dry.exited).code, 0, dry.stderr())
  t.equal(dry.stdout(), '', 'the dry run lists nothing')
  const first = await rig.dredger(t, { rules: narrow })
  await first.run.waitForOutput(DREDGER_CYCLE_FINISHED, 60_000)
  t.same(logLines(first.run, DREDGER_REMOVED), [])
  await stop(first.run)
  for (const peer of [rig.mirror, rig.priv]) t.same(await held(peer, 'adm'), VERSIONS)

  const wide = [{ rule: 'DenyIdentity', package: 'adm', versions: '1.0.1', appliesTo: ['admission', 'revocation'] }]
  const walk = await rig.dredger(t, { rules: wide, dredger: { fullWalk: true } })
  await walk.run.waitForOutput(DREDGER_CYCLE_FINISHED, 60_000)
  t.match(logLines(walk.run, DREDGER_CYCLE_FINISHED)[0]?.data, { kind: 'full_walk', removed: 2 })
  await stop(walk.run)
  for (const peer of [rig.mirror, rig.priv]) {
    t.same(await held(peer, 'adm'), ['1.0.0', '1.0.2'])
    t.equal(await tarball(peer, 'adm', '1.0.1'), 404)
  }
})
t.test('past the cap nothing more is removed, /readyz is 503 halted; a restart with a narrower rule proceeds', async (t) => {
  await rig.seed('capped')
  const first = await rig.dredger(t, { rules: [{ rule: 'DenyIdentity', package: 'capped', versions: '>=1.0.0' }], dredger: { maxRemovalsPerCycle: 2 } })
  await first.run.waitForOutput(DREDGER_HALTED, 60_000)
  const [halt] = logLines(first.run, DREDGER_HALTED)
  t.match(halt, { status: 'error', data: { cap: 2, count: 6, rule: 'mounts.js.rules[0] DenyIdentity capped@>=1.0.0', mount: 'js' } })
  t.equal(logLines(first.run, DREDGER_REMOVED).length, 2, 'the cap was removed, nothing more')
  const ready = await readyz(first.port)
  t.equal(ready.status, 503)
  t.equal(ready.body.mounts['js'], 'halted')
  t.same(await held(rig.mirror, 'capped'), ['1.0.2'], 'the first two went from the mirror target')
  t.same(await held(rig.priv, 'capped'), VERSIONS, 'the private cache was left alone past the cap')
  await stop(first.run)

  const second = await rig.dredger(t, { rules: [{ rule: 'DenyIdentity', package: 'capped', versions: '1.0.2' }], dredger: { maxRemovalsPerCycle: 2 } })
  await second.run.waitForOutput(DREDGER_CYCLE_FINISHED, 60_000)
  t.same(logLines(second.run, DREDGER_HALTED), [])
  t.equal(logLines(second.run, DREDGER_REMOVED).length, 2)
  t.equal((await readyz(second.port)).status, 200)
  t.same(await held(rig.mirror, 'capped'), [])
  t.same(await held(rig.priv, 'capped'), ['1.0.0', '1.0.1'])
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
  await rig.seed('crash', [rig.mirror])
  const front = await relay(rig.mirror)
  t.teardown(() => new Promise<void>((resolve) => { front.server.closeAllConnections(); front.server.close(() => resolve()) }))
  const rules = [{ rule: 'DenyIdentity', package: 'crash', versions: '1.0.1' }]
  const first = await rig.dredger(t, { rules, mirrorUrl: front.url, withPrivate: false })
  await front.held
  // The role process is the launcher's child: kill it, not the launcher, so nothing runs after the signal.
  const rolePid = Number(execFileSync('ps', ['-o', 'pid=', '--ppid', String(first.run.child.pid)]).toString().trim().split('\n')[0])
  t.ok(rolePid > 0)
  process.kill(rolePid, 'SIGKILL')
  await first.run.exited
  t.same(logLines(first.run, DREDGER_REMOVED), [], 'killed inside the removal')
  // Fail closed: the tarball went first, so no tarball is left that no document names.
  // (Verdaccio answers 500, not 404, for a tarball its document still names: either way, not served.)
  const left = await tarball(rig.mirror, 'crash', '1.0.1')
  t.not(left, 200, `the tarball is not served (${left})`)
  t.same(await held(rig.mirror, 'crash'), VERSIONS, 'the document still names it, so the restart finds it')

  front.release()
  const second = await rig.dredger(t, { rules, mirrorUrl: front.url, withPrivate: false })
  await second.run.waitForOutput(DREDGER_CYCLE_FINISHED, 60_000)
  t.equal(logLines(second.run, DREDGER_REMOVED).length, 1)
  t.same(await held(rig.mirror, 'crash'), ['1.0.0', '1.0.2'])
  t.equal(await tarball(rig.mirror, 'crash', '1.0.1'), 404)
  t.equal(await tarball(rig.mirror, 'crash', '1.0.0'), 200)
  await stop(second.run)
})

