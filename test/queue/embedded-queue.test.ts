import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { ManualClock } from '../../engine/clock.js'
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'
import { queueSuite } from './queue.suite.js'

t.test('the shared queue suite, embedded queue', async (t) => {
  queueSuite(t, async ({ maxReceiveCount }) => {
    const root = await mkdtemp(join(tmpdir(), 'proxy-queue-'))
    const clock = new ManualClock()
    const deadLetter = await EmbeddedQueue.open({ dir: join(root, 'dead-letter'), clock })
    const queue = await EmbeddedQueue.open({ dir: join(root, 'jobs'), clock, redrive: { maxReceiveCount, deadLetterQueue: deadLetter } })
    return {
      queue, deadLetter,
      elapse: async (seconds) => { clock.advance(seconds * 1000) },
      close: async () => {
        await queue.close()
        await deadLetter.close()
        await rm(root, { recursive: true, force: true })
      },
    }
  })
})
