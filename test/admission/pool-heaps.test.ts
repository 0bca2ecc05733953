/**
 * The proxy role wires every packument thread's heap into its budget sampler
 * (issue 11): the pool threads report through the SharedArrayBuffer the
 * composition root hands them, and the sampler reads them with the main heap.
 * An idle pool keeps one thread (POOL_MIN_THREADS, issue 18); the others
 * start under load and retire when idle (test/memory/sampler-pool.test.ts
 * reads a full pool and a pool that lost its threads).
 */
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import type { HeapsReading } from '../../engine/memory/sampler.js'
import { startTestProxy } from '../helpers/proxy.js'
import { POOL_MIN_THREADS } from '../../engine/memory/v8-limits.js'

t.test('the proxy\'s sampler reads the main heap and each pool thread\'s', async (t) => {
  const proxy = await startTestProxy(t, { document: { runtime: { cores: 2 } } })
  const heaps = (): HeapsReading => proxy.role.metrics()['service.runtime.heaps'] as HeapsReading
  // Bounded polling: the threads start and the sampler ticks when the machine lets them.
  const idle = 1 + POOL_MIN_THREADS
  for (let i = 0; i < 600 && heaps().heaps < idle; i++) await sleep(50)
  const reading = heaps()
  t.equal(reading.heaps, idle, 'the main thread and the pool thread kept when idle')
  t.ok(reading.usedBytes > 0 && reading.usedBytes < reading.limitBytes, 'used within the summed limits')
  t.ok(reading.fullest > 0 && reading.fullest < 1, 'the fullest heap as a fraction of its limit')
})
