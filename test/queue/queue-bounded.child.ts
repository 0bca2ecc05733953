/**
 * Child process for the bounded-queue tests, run under a small
 * --max-old-space-size so that holding whole bodies or a whole journal in
 * the heap crashes it. Environment:
 *   QUEUE_CHILD_DIR   the queue folder
 *   QUEUE_CHILD_MODE  `open`: opens the folder, prints `stats <json>` and
 *                     `log <json>` for each warning or error, then
 *                     `body <text>` for each message received (the body's
 *                     first 40 characters), and closes;
 *                     `flood`: QUEUE_CHILD_COUNT downloads, 16 at a time,
 *                     each sending a job of QUEUE_CHILD_BODY_BYTES whose
 *                     dedupKey cycles over QUEUE_CHILD_ARTIFACTS artifacts,
 *                     plus one 200 KB job per 10 downloads; prints
 *                     `stats <json>` and closes;
 *                     `churn`: sends QUEUE_CHILD_COUNT messages of 8 KB
 *                     (`sent <body>` as each resolves), then, 8 lanes at a
 *                     time, sends one more, receives one and deletes it
 *                     (`deleting <name>` before the delete, `deleted <name>`
 *                     once it resolved), until
 *                     killed. It compacts over and over.
 * Writes to a pipe are synchronous on Linux, so every line printed before a
 * kill reaches the parent.
 */
import { RecordingLogger } from '../doubles/recording-logger.js'
import type { LogData, LogLevel } from '../../engine/log/logger.js'
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'

class PrintingLogger extends RecordingLogger {
  override warn(message: string, data: LogData = {}): void { print('warn', message, data) }
  override error(message: string, data: LogData = {}): void { print('error', message, data) }
}
function print(level: LogLevel, message: string, data: LogData): void {
  process.stdout.write(`log ${JSON.stringify({ level, message, data })}\n`)
}

const dir = process.env['QUEUE_CHILD_DIR']
const mode = process.env['QUEUE_CHILD_MODE']
const count = Number(process.env['QUEUE_CHILD_COUNT'] ?? '100')
const number = (name: string): number | undefined => (process.env[name] === undefined ? undefined : Number(process.env[name]))

if (dir !== undefined) {
  const queue = await EmbeddedQueue.open({
    dir, logger: new PrintingLogger(),
    compactionFloor: number('QUEUE_CHILD_COMPACTION_FLOOR'), maxJobs: number('QUEUE_CHILD_MAX_JOBS'),
  })
  if (mode === 'open') {
    process.stdout.write(`stats ${JSON.stringify(queue.stats())}\n`)
    for (;;) {
      const batch = await queue.receive({ max: 10, visibilitySeconds: 300 })
      if (batch.length === 0) break
      for (const m of batch) process.stdout.write(`body ${m.body.slice(0, 40)}\n`)
    }
    await queue.close()
  } else if (mode === 'flood') {
    const bodyBytes = Number(process.env['QUEUE_CHILD_BODY_BYTES'])
    const artifacts = Number(process.env['QUEUE_CHILD_ARTIFACTS'])
    const huge = `{"url":"https://127.0.0.1/${'a'.repeat(200_000)}.tgz"}`
    let next = 0
    const lane = async (): Promise<void> => {
      while (next < count) {
        const i = next++
        const artifact = i % artifacts
        // A long, distinct URL per artifact: what a public download enqueues.
        const head = `{"url":"https://127.0.0.1/${String(artifact).padStart(8, '0')}/`
        const body = `${head}${'p'.repeat(bodyBytes - head.length - 6)}.tgz"}` // exactly bodyBytes
        await queue.send(body, { dedupKey: `artifact-${artifact}` }).catch(() => {})
        if (i % 10 === 0) await queue.send(huge).catch(() => {})
      }
    }
    await Promise.all(Array.from({ length: 16 }, lane))
    process.stdout.write(`stats ${JSON.stringify(queue.stats())}\n`)
    await queue.close()
  } else if (mode === 'churn') {
    const pad = 'c'.repeat(8000)
    let serial = 0
    const send = async (): Promise<void> => {
      const body = `job ${serial++} ${pad}`
      await queue.send(body)
      process.stdout.write(`sent ${body.slice(0, body.indexOf(' ', 4))}\n`)
    }
    for (let i = 0; i < count; i += 10) await Promise.all(Array.from({ length: Math.min(10, count - i) }, send))
    process.stdout.write('ready\n')
    const lane = async (): Promise<void> => {
      for (;;) {
        await send()
        const [message] = await queue.receive({ max: 1, visibilitySeconds: 300 })
        if (message === undefined) continue
        const name = message.body.slice(0, message.body.indexOf(' ', 4))
        // Said before the delete: a kill between the delete and its line must not look like a loss.
        process.stdout.write(`deleting ${name}\n`)
        await queue.delete(message.receiptHandle)
        process.stdout.write(`deleted ${name}\n`)
      }
    }
    await Promise.all(Array.from({ length: 8 }, lane))
  }
}
