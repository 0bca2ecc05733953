/** The shared backend suite on the process's memory (engine/cache/memory-backend.ts), on a manual clock. */
import t from 'tap'
import { MemoryBackend } from '../../engine/cache/memory-backend.js'
import { ManualClock } from '../doubles/manual-clock.js'
import { sharedBackendSuite } from './shared-backend.suite.js'

t.test('the shared backend suite, in memory', async (t) => {
  sharedBackendSuite(t, async () => {
    const clock = new ManualClock()
    const backend = new MemoryBackend(clock)
    return { backend, elapse: async (ms) => { clock.advance(ms) }, close: () => backend.close() }
  })
})

t.test('an expired claim is claimable again after a burst of claims', async (t) => {
  const clock = new ManualClock()
  const backend = new MemoryBackend(clock)
  for (let i = 0; i < 1000; i++) await backend.claim(`job|${i}`, 100)
  clock.advance(200)
  await backend.claim('job|last', 100)
  // Only the last claim is live: every earlier key is claimable again.
  t.equal(await backend.claim('job|0', 100), true)
  t.equal(await backend.claim('job|last', 100), false)
})
