/**
 * Child process for embedded-queue-durability.test.ts, killed with SIGKILL
 * by its parent. Environment:
 *   QUEUE_CHILD_DIR   the queue folder
 *   QUEUE_CHILD_MODE  `send`: sends QUEUE_CHILD_COUNT messages, four at a
 *                     time, printing `sent <body>` as each send resolves,
 *                     then `done`, and waits to be killed;
 *                     `receive`: receives one message with a 30 s window,
 *                     prints `received <messageId>` and waits to be killed.
 *                     Either way it first prints `pid <its PID>` once the
 *                     folder is open.
 *
 * tap also runs every file under test/ as a test file; without the variables
 * this file does nothing (tap reports it as "no tests found").
 * Writes to a pipe are synchronous on Linux, so every line printed before the
 * kill reaches the parent.
 */
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'

const dir = process.env['QUEUE_CHILD_DIR']
const mode = process.env['QUEUE_CHILD_MODE']
if (dir !== undefined) {
  const queue = await EmbeddedQueue.open({ dir })
  process.stdout.write(`pid ${process.pid}\n`) // its PID in its own namespace, for folder-lock.test.ts
  if (mode === 'send') {
    const count = Number(process.env['QUEUE_CHILD_COUNT'] ?? '100')
    let next = 0
    const lane = async (): Promise<void> => {
      while (next < count) {
        const body = `job ${next++}`
        await queue.send(body)
        process.stdout.write(`sent ${body}\n`)
      }
    }
    await Promise.all([lane(), lane(), lane(), lane()])
    process.stdout.write('done\n')
  } else if (mode === 'receive') {
    const [message] = await queue.receive({ max: 1, visibilitySeconds: 30 })
    process.stdout.write(`received ${message?.messageId ?? 'nothing'}\n`)
  }
  setInterval(() => {}, 60_000) // hold the folder until killed
}
