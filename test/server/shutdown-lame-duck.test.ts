/**
 * The lame-duck period of the drain (SPEC.md 3.1; issue 30 item 5) on a real
 * front door, both listeners, with the drain's timers moved by hand
 * (test/doubles/manual-timers.ts): at the first signal /readyz answers 503
 * and every answer carries `Connection: close`, yet new connections are
 * still accepted and answered; when the delay has passed the listeners
 * close, the requests in flight finish, release runs and the process exits
 * 0. The delay counts against the drain bound; a second signal still stops
 * at once; a delay of 0 closes the listeners in the same turn as the signal,
 * as before the period existed.
 */
import { connect } from 'node:net'
import { once } from 'node:events'
import t, { type Test } from 'tap'
import { Client } from 'undici'
import { Liveness } from '../../server/health/liveness.js'
import { Readiness } from '../../server/health/readiness.js'
import { FrontDoor } from '../../server/http/front-door.js'
import { EXIT } from '../../server/lifecycle/exit-codes.js'
import { DRAIN_COMPLETED, DRAIN_STARTED, LISTENER_CLOSED, Shutdown } from '../../server/lifecycle/shutdown.js'
import { mountProbes } from '../../server/routes/probes.js'
import { ManualTimers } from '../doubles/manual-timers.js'
import { RecordingLogger } from '../doubles/recording-logger.js'

const DELAY_MS = 5_000
const TIMEOUT_MS = 30_000

interface Rig {
  readonly door: FrontDoor
  readonly shutdown: Shutdown
  readonly timers: ManualTimers
  readonly logger: RecordingLogger
  /** What the drain did, in order: `release`, `exit <code>`. */
  readonly events: string[]
  /** Resolves with the exit code. */
  readonly exited: Promise<number>
  /** A request to `/held` waits until this is called. */
  readonly releaseHeld: () => void
  /** Resolves when a request to `/held` has arrived. */
  readonly heldArrived: Promise<void>
}

async function rig(t: Test, delayMs: number): Promise<Rig> {
  const logger = new RecordingLogger()
  const door = new FrontDoor({ host: '127.0.0.1', port: 0, compatPort: 0, logger })
  const readiness = new Readiness()
  readiness.addMount('js', false)
  mountProbes(door, new Liveness(), readiness)
  let arrived!: () => void
  const heldArrived = new Promise<void>((resolve) => { arrived = resolve })
  let releaseHeld!: () => void
  const held = new Promise<void>((resolve) => { releaseHeld = resolve })
  door.route('get', '/held', async (ex) => {
    arrived()
    await held
    ex.respondJson(200, { held: true })
  })
  await door.listen()
  readiness.markStarted()
  t.teardown(() => { releaseHeld(); door.stopAccepting() })
  const timers = new ManualTimers()
  const events: string[] = []
  let exit!: (code: number) => void
  const exited = new Promise<number>((resolve) => { exit = resolve })
  const shutdown = new Shutdown({
    door, readiness, logger, timers,
    drainTimeoutMs: TIMEOUT_MS,
    drainDelayMs: delayMs,
    release: async () => { events.push('release') },
    exit: (code) => { events.push(`exit ${code}`); exit(code) },
  })
  return { door, shutdown, timers, logger, events, exited, releaseHeld, heldArrived }
}

/** One request on a new connection: its status and `Connection` header, or the connect error's code. */
async function fresh(port: number, path = '/livez'): Promise<{ status: number; connection: string | undefined } | string> {
  const client = new Client(`http://127.0.0.1:${port}`)
  try {
    const res = await client.request({ path, method: 'GET' })
    await res.body.dump()
    return { status: res.statusCode, connection: res.headers['connection'] as string | undefined }
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? String(error)
  } finally {
    await client.destroy()
  }
}

/** Whether a TCP connection to `port` is refused. */
async function refused(port: number): Promise<boolean> {
  const socket = connect(port, '127.0.0.1')
  // events.once rejects with the 'error' event: the refusal arrives as the rejection.
  const outcome = await once(socket, 'connect').then(() => 'connected', (error: NodeJS.ErrnoException) => error.code)
  socket.destroy()
  return outcome === 'ECONNREFUSED'
}

/** Lets the drain's awaited promises run after a timer fired. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

t.test('lame duck: 503 and Connection: close at once, still accepting; the listeners close after the delay; drain; exit 0', async (t) => {
  const { door, shutdown, timers, logger, events, exited, releaseHeld, heldArrived } = await rig(t, DELAY_MS)
  const keptAlive = new Client(`http://127.0.0.1:${door.port}`, { keepAliveTimeout: 60_000 })
  t.teardown(() => keptAlive.destroy().catch(() => {}))
  const before = await keptAlive.request({ path: '/readyz', method: 'GET' })
  t.equal(before.statusCode, 200)
  t.equal(before.headers['connection'], undefined, 'a keep-alive answer before the signal')
  await before.body.dump()

  const inFlight = new Client(`http://127.0.0.1:${door.port}`)
  t.teardown(() => inFlight.destroy().catch(() => {}))
  const held = inFlight.request({ path: '/held', method: 'GET' })
  await heldArrived

  shutdown.signal('SIGTERM')
  t.match(logger.find(DRAIN_STARTED)[0]?.data, { reason: 'SIGTERM', inFlight: 1, timeoutSeconds: 30, delaySeconds: 5 })

  const draining = await keptAlive.request({ path: '/readyz', method: 'GET' })
  t.equal(draining.statusCode, 503, '/readyz is 503 from the signal on')
  t.match(await draining.body.json(), { status: 'not_ready', mounts: { js: 'draining' } })
  t.equal(draining.headers['connection'], 'close', 'a keep-alive connection is told to reconnect on its next answer')

  for (const [name, port] of [['uWS', door.port], ['compat', door.compatPort]] as const) {
    t.same(await fresh(port), { status: 200, connection: 'close' }, `${name}: a new connection is still accepted and answered, with Connection: close`)
  }
  timers.advance(DELAY_MS - 1)
  await settle()
  t.same(await fresh(door.port), { status: 200, connection: 'close' }, 'still accepting just before the delay ends')
  t.same(logger.find(LISTENER_CLOSED), [], 'the listener is open')

  timers.advance(1)
  await settle()
  t.ok(await refused(door.port), 'uWS: new connections refused once the delay has passed')
  t.ok(await refused(door.compatPort), 'compat: the same')
  t.match(logger.find(LISTENER_CLOSED)[0]?.data, { inFlight: 1 })
  t.same(events, [], 'the request in flight holds the drain')

  releaseHeld()
  const answer = await held
  t.equal(answer.statusCode, 200, 'the request in flight finishes')
  t.equal(answer.headers['connection'], 'close')
  await answer.body.dump()
  t.equal(await exited, EXIT.OK)
  t.same(events, ['release', `exit ${EXIT.OK}`], 'release after the door is idle, then exit 0')
  t.equal(logger.find(DRAIN_COMPLETED).length, 1)
})

t.test('a second signal during the lame-duck period stops at once (exit 3)', async (t) => {
  const { door, shutdown, events, exited } = await rig(t, DELAY_MS)
  shutdown.signal('SIGTERM')
  t.same(await fresh(door.port), { status: 200, connection: 'close' }, 'in the lame-duck period')
  shutdown.signal('SIGTERM')
  t.equal(await exited, EXIT.CANCELLED)
  t.same(events, [`exit ${EXIT.CANCELLED}`], 'no release, no drain')
})

t.test('the delay counts against the drain bound: a request still in flight at the bound from the signal exits 1', async (t) => {
  const { shutdown, timers, events, exited, heldArrived, door } = await rig(t, DELAY_MS)
  const client = new Client(`http://127.0.0.1:${door.port}`)
  t.teardown(() => client.destroy().catch(() => {}))
  const held = client.request({ path: '/held', method: 'GET' }).catch(() => undefined)
  await heldArrived
  shutdown.signal('SIGTERM')
  timers.advance(DELAY_MS)
  await settle()
  timers.advance(TIMEOUT_MS - DELAY_MS - 1)
  await settle()
  t.same(events, [], 'not yet at the bound')
  timers.advance(1)
  t.equal(await exited, EXIT.ABNORMAL, 'the bound counts from the signal, not from the listener closing')
  t.same(events, [`exit ${EXIT.ABNORMAL}`])
  void held
})

t.test('delay 0: the listeners close in the same turn as the signal (the drain without a lame-duck period)', async (t) => {
  const { door, shutdown, timers, logger, events, exited } = await rig(t, 0)
  shutdown.signal('SIGTERM')
  t.equal(timers.pendingCount, 1, 'only the drain bound is pending')
  t.ok(await refused(door.port), 'uWS refuses new connections at once')
  t.ok(await refused(door.compatPort), 'compat too')
  t.same(logger.find(LISTENER_CLOSED), [], 'no separate listener-closed line without a period')
  t.equal(await exited, EXIT.OK, 'nothing in flight: exit 0')
  t.same(events, ['release', `exit ${EXIT.OK}`])
  t.equal(timers.pendingCount, 0, 'the bound is cleared')
})
