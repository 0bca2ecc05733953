/**
 * A journal write failure (ENOSPC injected through the journal's file seam)
 * no longer stops the embedded queue for the life of the process: the failed
 * work is refused, the failure is counted and logged once, `health()` says
 * the queue cannot take work (readiness reads it), and once the disk takes
 * writes again the queue rewrites its live state and takes work: on the next
 * call, or on its own within a few seconds. Nothing a sender was told is
 * durable is lost; nothing a sender was told failed appears later.
 */
import { mkdtemp, open as openFile, rm } from 'node:fs/promises'
import type { FileHandle } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import type { Test } from 'tap'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'
import { COMPACT_FILE, JOURNAL_WRITABLE_AGAIN, JOURNAL_WRITE_FAILED } from '../../engine/queue/queue-journal.js'
import type { JournalFiles } from '../../engine/queue/queue-journal.js'
import { QueueFailureReason } from '../../engine/queue/queue.js'
import { rejectsWithReason } from './queue.suite.js'

/** A disk that answers ENOSPC to every write and sync while `full`. */
class InjectedDisk implements JournalFiles {
  full = false
  /** When set, only files of this name fail. */
  only: string | undefined
  async open(path: string, flags: 'r' | 'a' | 'w'): Promise<FileHandle> {
    const handle = await openFile(path, flags)
    if (this.only !== undefined && basename(path) !== this.only) return handle
    return new Proxy(handle, {
      get: (target, property, receiver) => {
        const value: unknown = Reflect.get(target, property, receiver)
        if (typeof value !== 'function') return value
        if (['write', 'writeFile', 'datasync', 'sync'].includes(String(property))) {
          return (...args: unknown[]) => this.full
            ? Promise.reject(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28 }))
            : (value as (...a: unknown[]) => unknown).apply(target, args)
        }
        return (value as (...a: unknown[]) => unknown).bind(target)
      },
    })
  }
}

async function folder(t: Test): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'queue-enospc-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  return join(root, 'jobs')
}

t.test('ENOSPC: refused, counted, logged once, health says so; back once the disk takes writes', async (t) => {
  const dir = await folder(t)
  const disk = new InjectedDisk()
  const logger = new RecordingLogger()
  const queue = await EmbeddedQueue.open({ dir, logger, files: disk })
  t.teardown(() => queue.close())
  for (const body of ['one', 'two', 'three']) await queue.send(body)
  t.match(queue.health(), { writable: true, writeFailures: 0 })

  disk.full = true
  await rejectsWithReason(t, queue.send('refused 1'), QueueFailureReason.UNAVAILABLE, 'the send that hit the full disk is refused')
  await rejectsWithReason(t, queue.send('refused 2'), QueueFailureReason.UNAVAILABLE, 'and the next')
  await rejectsWithReason(t, queue.receive({ max: 1, visibilitySeconds: 30 }), QueueFailureReason.UNAVAILABLE, 'receives too')
  t.match(queue.health(), { writable: false, reason: 'ENOSPC' })
  t.ok(queue.health().writeFailures >= 1, 'counted')
  t.equal(queue.stats().writeFailures, queue.health().writeFailures)
  t.match(logger.find(JOURNAL_WRITE_FAILED), [{ level: 'error', data: { code: 'ENOSPC' } }], 'logged once, at error')

  disk.full = false
  await sleep(1100) // a recovery is tried at most once a second
  await queue.send('four')
  t.match(queue.health(), { writable: true })
  t.equal(logger.find(JOURNAL_WRITABLE_AGAIN).length, 1)
  t.equal(logger.find(JOURNAL_WRITE_FAILED).length, 1, 'one error line for the whole episode')
  await queue.close()

  const reopened = await EmbeddedQueue.open({ dir, clock: { now: () => Date.now() + 3_600_000 } })
  t.teardown(() => reopened.close())
  const bodies: string[] = []
  for (;;) {
    const batch = await reopened.receive({ max: 10, visibilitySeconds: 300 })
    if (batch.length === 0) break
    bodies.push(...batch.map((m) => m.body))
  }
  t.same(bodies.sort(), ['four', 'one', 'three', 'two'], 'every durable send is there; no refused one')
})

t.test('recovery runs on its own, without a caller, once the disk takes writes again', async (t) => {
  const dir = await folder(t)
  const disk = new InjectedDisk()
  const queue = await EmbeddedQueue.open({ dir, files: disk })
  t.teardown(() => queue.close())
  await queue.send('kept')
  disk.full = true
  await rejectsWithReason(t, queue.send('refused'), QueueFailureReason.UNAVAILABLE)
  disk.full = false
  t.equal(queue.health().writable, false, 'not writable until a rewrite succeeds')
  for (let waited = 0; waited < 12_000 && !queue.health().writable; waited += 250) await sleep(250)
  t.equal(queue.health().writable, true, 'writable again with no send to prompt it')
  t.equal(queue.stats().jobs, 1)
})

t.test('a compaction that meets a full disk: the journal stays whole, the queue recovers', async (t) => {
  const dir = await folder(t)
  const disk = new InjectedDisk()
  disk.only = COMPACT_FILE
  disk.full = true
  const queue = await EmbeddedQueue.open({ dir, files: disk, compactionFloor: 4 })
  t.teardown(() => queue.close())
  await queue.send('kept')
  for (let i = 0; i < 10 && queue.health().writable; i++) {
    await queue.send(`gone ${i}`)
    const [m] = (await queue.receive({ max: 10, visibilitySeconds: 30 })).filter((m) => m.body !== 'kept')
    await queue.delete(m!.receiptHandle).catch(() => {})
  }
  t.match(queue.health(), { writable: false, reason: 'ENOSPC' }, 'the compaction failed on the full disk')
  t.equal(queue.stats().compactions, 0)
  disk.full = false
  await sleep(1100)
  await queue.send('after')
  t.ok(queue.stats().compactions > 0, 'the recovery rewrote the journal')
  await queue.close()
  const reopened = await EmbeddedQueue.open({ dir, clock: { now: () => Date.now() + 3_600_000 } })
  t.teardown(() => reopened.close())
  const bodies = (await reopened.receive({ max: 10, visibilitySeconds: 30 })).map((m) => m.body)
  t.same(bodies.sort(), ['after', 'kept'])
})

t.test('a batch that meets the full disk: every entry fails, none appears later; the next batch is refused whole', async (t) => {
  const dir = await folder(t)
  const disk = new InjectedDisk()
  const queue = await EmbeddedQueue.open({ dir, files: disk })
  t.teardown(() => queue.close())
  await queue.sendBatch([{ body: 'kept 1' }, { body: 'kept 2', dedupKey: 'k' }])
  disk.full = true
  const outcomes = await queue.sendBatch([{ body: 'refused 1' }, { body: 'refused 2', dedupKey: 'r' }, { body: 'refused 2 twin', dedupKey: 'r' }])
  t.ok(outcomes.every((o) => o.failure?.data?.['reason'] === QueueFailureReason.UNAVAILABLE), 'each entry, its twin too, fails unavailable')
  await rejectsWithReason(t, queue.sendBatch([{ body: 'refused 3' }]), QueueFailureReason.UNAVAILABLE, 'the next batch is refused whole')
  t.equal(queue.stats().jobs, 2, 'the refused entries left nothing behind')
  disk.full = false
  await sleep(1100)
  const after = await queue.sendBatch([{ body: 'after' }, { body: 'kept 2 twin', dedupKey: 'k' }])
  t.same(after[1], { messageId: after[1]?.messageId, deduplicated: true }, 'the kept keyed message still answers its key')
  await queue.close()
  const reopened = await EmbeddedQueue.open({ dir, clock: { now: () => Date.now() + 3_600_000 } })
  t.teardown(() => reopened.close())
  const bodies = (await reopened.receive({ max: 10, visibilitySeconds: 30 })).map((m) => m.body)
  t.same(bodies.sort(), ['after', 'kept 1', 'kept 2'])
})
