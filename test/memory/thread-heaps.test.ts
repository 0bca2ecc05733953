import t from 'tap'
import { ThreadHeapBoard, ThreadHeapSlot } from '../../engine/memory/thread-heaps.js'

const MiB = 1024 * 1024

t.test('a thread claims a slot, publishes, and the board reads it', async (t) => {
  const board = new ThreadHeapBoard(2)
  t.equal(board.slots, 2)
  const slot = ThreadHeapSlot.claim(board.buffer, 7)
  t.ok(slot)
  t.same(board.readings(), [], 'a claimed slot counts once it has published')
  slot?.publish({ usedBytes: 10 * MiB, limitBytes: 64 * MiB })
  t.same(board.readings(), [{ usedBytes: 10 * MiB, limitBytes: 64 * MiB }])
  slot?.publish({ usedBytes: 20 * MiB + 1, limitBytes: 64 * MiB })
  t.same(board.readings(), [{ usedBytes: 20 * MiB + 1024, limitBytes: 64 * MiB }], 'KiB, rounded up')
})

t.test('a full board leaves the next thread unreported; release frees a slot for a new thread', async (t) => {
  const board = new ThreadHeapBoard(2)
  const a = ThreadHeapSlot.claim(board.buffer, 1)
  const b = ThreadHeapSlot.claim(board.buffer, 2)
  t.equal(ThreadHeapSlot.claim(board.buffer, 3), undefined, 'no free slot')
  a?.publish({ usedBytes: MiB, limitBytes: 8 * MiB })
  b?.publish({ usedBytes: 2 * MiB, limitBytes: 8 * MiB })
  board.release(1)
  t.same(board.readings(), [{ usedBytes: 2 * MiB, limitBytes: 8 * MiB }], 'the gone thread no longer counts')
  a?.publish({ usedBytes: 5 * MiB, limitBytes: 8 * MiB })
  t.equal(board.readings().length, 1, 'a released slot ignores its old owner')
  const c = ThreadHeapSlot.claim(board.buffer, 3)
  t.ok(c, 'the freed slot is claimed again')
  t.equal(board.readings().length, 1, 'the new owner starts with no reading')
  c?.publish({ usedBytes: 3 * MiB, limitBytes: 8 * MiB })
  t.equal(board.readings().length, 2)
  board.release(99)
  t.equal(board.readings().length, 2, 'releasing an unknown thread changes nothing')
})

t.test('the same buffer is seen from another thread', async (t) => {
  const { Worker } = await import('node:worker_threads')
  const board = new ThreadHeapBoard(1)
  const source = `
    const { workerData, threadId } = require('node:worker_threads')
    const cells = new Int32Array(workerData)
    Atomics.compareExchange(cells, 0, 0, threadId)
    Atomics.store(cells, 1, 2048)
    Atomics.store(cells, 2, 4096)
  `
  const worker = new Worker(source, { eval: true, workerData: board.buffer })
  t.teardown(() => worker.terminate())
  const threadId = worker.threadId
  await new Promise((resolve) => worker.once('exit', resolve))
  t.same(board.readings(), [{ usedBytes: 2 * MiB, limitBytes: 4 * MiB }])
  board.release(threadId)
  t.same(board.readings(), [])
})

t.test('guards', async (t) => {
  t.throws(() => new ThreadHeapBoard(0), TypeError)
  t.throws(() => new ThreadHeapBoard(1.5), TypeError)
  t.throws(() => ThreadHeapSlot.claim(new SharedArrayBuffer(5), 1), TypeError)
  t.throws(() => ThreadHeapSlot.claim(new ArrayBuffer(12) as unknown as SharedArrayBuffer, 1), TypeError)
  t.throws(() => ThreadHeapSlot.claim(new ThreadHeapBoard(1).buffer, 0), TypeError, 'the main thread id is not a worker')
})
