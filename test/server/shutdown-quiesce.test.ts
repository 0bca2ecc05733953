/**
 * The drain's order (SPEC.md 7.2; issue 12 "Drain"): work that does not come
 * through the front door (the mirror worker's receives) is stopped as the
 * drain starts, beside the in-flight requests and within the same bound,
 * and only then does release run, once the door is idle.
 */
import t from 'tap'
import type { FrontDoor } from '../../server/http/front-door.js'
import type { Readiness } from '../../server/health/readiness.js'
import { Shutdown } from '../../server/lifecycle/shutdown.js'
import { EXIT } from '../../server/lifecycle/exit-codes.js'
import { RecordingLogger } from '../doubles/recording-logger.js'

t.test('quiesce runs at drain start, before the door is idle; release after it', async (t) => {
  const events: string[] = []
  let idle!: () => void
  const whenIdle = new Promise<void>((resolve) => { idle = resolve })
  const door = {
    inFlight: 1,
    startLameDuck: () => events.push('door draining'),
    stopAccepting: () => events.push('listener closed'),
    whenIdle: () => whenIdle,
  } as unknown as FrontDoor
  const readiness = { startDraining: () => events.push('not ready') } as unknown as Readiness
  let exited: number | undefined
  const shutdown = new Shutdown({
    door, readiness, drainTimeoutMs: 5_000, logger: new RecordingLogger(),
    quiesce: () => events.push('quiesce'),
    release: async () => { events.push('release') },
    exit: (code) => { exited = code },
  })
  const drained = shutdown.drain('SIGTERM')
  await new Promise((resolve) => setImmediate(resolve))
  t.same(events, ['not ready', 'door draining', 'quiesce', 'listener closed'], 'receives stop while a request is still in flight')
  idle()
  await drained
  t.same(events, ['not ready', 'door draining', 'quiesce', 'listener closed', 'release'])
  t.equal(exited, EXIT.OK)
})
