/**
 * The embedded queue: SQS semantics (queue.ts) kept in one folder on local
 * disk, with no service to run (DESIGN.md, "Embedded by default").
 *
 * State lives in memory and in an append-only journal (queue-journal.ts):
 * - `send` and `sendBatch` resolve only once their records are fsynced, so
 *   a process killed with SIGKILL after one resolved loses nothing; a batch
 *   is one append (one write, one sync);
 * - `receive` also waits for its records, so the receive count survives a
 *   crash: a job that kills its worker still runs down its redrive budget
 *   instead of crashing workers forever;
 * - the visibility deadline is journalled as an absolute time, so a message
 *   received and never acknowledged comes back after its window even across
 *   a restart.
 * Visibility runs on the injected Clock; a long poll's wait is real time.
 *
 * Dead-lettering is at least once: the message is made durable in the
 * dead-letter queue before its removal here is journalled, so a crash in
 * between can leave a duplicate, never a loss. It keeps its message id.
 *
 * Bounded (issue 12, embedded-queue-bounds.ts): a body over `maxBodyBytes`
 * is refused (`too-large`); a send whose `dedupKey` names a pending message
 * adds nothing; past `maxJobs` or `maxBytes` of pending bodies a new send is
 * dropped (`full`), logged once per episode and counted, and the pending
 * messages are kept. Replay applies the same bounds in journal order, so a
 * journal an older build let grow opens within them, says what it dropped
 * and is compacted at once. The journal is compacted whenever garbage
 * dominates it, in lines or in bytes.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdir } from 'node:fs/promises'
import { basename, resolve } from 'node:path'
import { systemClock } from '../clock.js'
import type { Clock } from '../clock.js'
import { ServiceError, toServiceError } from '../errors.js'
import { silentLogger } from '../log/logger.js'
import type { Logger } from '../log/logger.js'
import { checkBatch, checkReceive, checkSend, checkVisibility } from './queue-arguments.js'
import { QueueJournal } from './queue-journal.js'
import type { JournalFiles, JournalHealth, JournalRecord, SendRecord } from './queue-journal.js'
import { QUEUE_LIMITS, QueueFailureReason } from './queue.js'
import type { Queue, QueueAttributes, QueueMessage, ReceiveOptions, SendBatchEntry, SendBatchOutcome, SendOptions, SendResult } from './queue.js'
import { VisibilityHeap } from './visibility-heap.js'
import { checkBounds, DEAD_LETTERS_DROPPED, maxLineBytesFor, QUEUE_FULL, QUEUE_REPLAY_DROPPED, QUEUE_ROOM_AGAIN } from './embedded-queue-bounds.js'
import type { EmbeddedQueueBounds } from './embedded-queue-bounds.js'

export interface EmbeddedRedrive {
  /** Receives after which the next delivery goes to the dead-letter queue; at least 1. */
  readonly maxReceiveCount: number
  /** Another embedded queue, in its own folder. */
  readonly deadLetterQueue: EmbeddedQueue
}

export interface EmbeddedQueueOptions {
  /** The queue's folder; created if missing. One process owns it at a time. */
  readonly dir: string
  /** Shown as the dead-letter target of queues that redrive here. Default: the folder's name. */
  readonly name?: string
  readonly clock?: Clock
  readonly logger?: Logger
  readonly redrive?: EmbeddedRedrive
  /** Journal lines below which no compaction happens. Default 1024. */
  readonly compactionFloor?: number
  /** Largest body in UTF-8 bytes. Default EMBEDDED_QUEUE_BOUNDS.maxBodyBytes (8 KiB). */
  readonly maxBodyBytes?: number
  /** Most pending messages. Default EMBEDDED_QUEUE_BOUNDS.maxJobs (10,000). */
  readonly maxJobs?: number
  /** Most pending body bytes. Default EMBEDDED_QUEUE_BOUNDS.maxBytes (16 MiB). */
  readonly maxBytes?: number
  /** The journal's file operations; a seam for tests that inject a failing disk. */
  readonly files?: JournalFiles
}

export interface EmbeddedQueueHealth extends JournalHealth {
  /** True from a send dropped for the bound of jobs or bytes until the next accepted send (a full episode). */
  readonly full: boolean
}

/** Counters since open, for the role's metrics; gauges of the current state. */
export interface EmbeddedQueueStats {
  /** Pending messages (visible, delayed or in flight). */
  readonly jobs: number
  /** Their body bytes. */
  readonly bytes: number
  readonly journalBytes: number
  readonly journalLines: number
  /** Sends that added a message. */
  readonly sent: number
  /** Sends answered by a pending message with the same dedupKey. */
  readonly deduplicated: number
  /** Sends refused with reason `too-large`. */
  readonly refusedTooLarge: number
  /** Sends dropped with reason `full`. */
  readonly droppedFull: number
  /** Messages in the journal that open did not keep (too large, or beyond the bound). */
  readonly droppedAtReplay: number
  /** Messages over their receive budget that the dead-letter queue had no room for. */
  readonly deadLettersDropped: number
  /** Journal rewrites: compactions, and recoveries after a write failure. */
  readonly compactions: number
  readonly writeFailures: number
}

interface Entry {
  readonly id: string
  readonly body: string
  /** The body's UTF-8 bytes, what the byte bound counts. */
  readonly size: number
  readonly key: string | undefined
  readonly seq: number
  visibleAt: number
  count: number
  receipt: string | null
  receivedAt: number | null
  /** Bumped on every change; heap entries with an older version are stale. */
  version: number
  /** Until its send record is durable: a de-duplicated send waits for it too. */
  written?: Promise<void>
}

interface Slot {
  readonly visibleAt: number
  readonly seq: number
  readonly entry: Entry
  readonly version: number
}

/** SQS's ceiling: a receipt's visibility never reaches past twelve hours from its receive. */
const RECEIPT_LIFETIME_MS = QUEUE_LIMITS.maxVisibilitySeconds * 1000
const RECEIPT_SEPARATOR = '.'
/** Journal bytes allowed beyond twice the live state before a compaction. */
const JOURNAL_SLACK_BYTES = 4 * 1024 * 1024
/** Bookkeeping bytes per pending message in the journal (ids, times, receipt), for the byte trigger. */
const RECORD_OVERHEAD_BYTES = 200
/** Message ids named in a replay-drop warning; the rest are counted. */
const DROPPED_IDS_SHOWN = 10

export class EmbeddedQueue implements Queue {
  readonly name: string
  readonly #dir: string
  readonly #journal: QueueJournal
  readonly #clock: Clock
  readonly #redrive: EmbeddedRedrive | undefined
  readonly #compactionFloor: number
  readonly #bounds: EmbeddedQueueBounds
  readonly #logger: Logger
  readonly #entries = new Map<string, Entry>()
  /** Pending messages by dedupKey. */
  readonly #keys = new Map<string, Entry>()
  readonly #heap = new VisibilityHeap<Slot>()
  readonly #waiters = new Set<() => void>()
  #bytes = 0
  #seq = 0
  #closed = false
  /** Drops in the current full episode; undefined while the queue has room. */
  #fullEpisode: { dropped: number } | undefined
  readonly #counts = { sent: 0, deduplicated: 0, refusedTooLarge: 0, droppedFull: 0, droppedAtReplay: 0, deadLettersDropped: 0 }

  private constructor(dir: string, journal: QueueJournal, options: EmbeddedQueueOptions, bounds: EmbeddedQueueBounds) {
    this.name = options.name ?? basename(dir)
    this.#dir = dir
    this.#journal = journal
    this.#clock = options.clock ?? systemClock
    this.#redrive = options.redrive
    this.#compactionFloor = options.compactionFloor ?? 1024
    this.#bounds = bounds
    this.#logger = options.logger ?? silentLogger
  }

  static async open(options: EmbeddedQueueOptions): Promise<EmbeddedQueue> {
    if (typeof options.dir !== 'string' || options.dir === '') throw new TypeError('EmbeddedQueue: dir must be a non-empty string')
    const redrive = options.redrive
    if (redrive !== undefined) {
      if (!Number.isInteger(redrive.maxReceiveCount) || redrive.maxReceiveCount < 1 || redrive.maxReceiveCount > 1000) {
        throw new TypeError('EmbeddedQueue: redrive.maxReceiveCount must be an integer from 1 to 1000')
      }
      if (!(redrive.deadLetterQueue instanceof EmbeddedQueue)) throw new TypeError('EmbeddedQueue: redrive.deadLetterQueue must be an EmbeddedQueue')
    }
    const dir = resolve(options.dir)
    if (redrive !== undefined && redrive.deadLetterQueue.#dir === dir) {
      throw new TypeError('EmbeddedQueue: a queue cannot be its own dead-letter queue')
    }
    const bounds = checkBounds(options)
    const logger = options.logger ?? silentLogger
    // The journal exists before the queue does: replay fills this holder, which the queue then adopts.
    const replayed = new ReplayState(bounds)
    let journal: QueueJournal
    try {
      await mkdir(dir, { recursive: true })
      journal = await QueueJournal.open(dir, {
        logger, maxLineBytes: maxLineBytesFor(bounds.maxBodyBytes), files: options.files,
        replay: { record: (r) => replayed.apply(r), overLong: (op, id) => replayed.overLong(op, id) },
      })
    } catch (error) {
      throw toServiceError(error, 'QUEUE_FAILURE')
    }
    const queue = new EmbeddedQueue(dir, journal, options, bounds)
    journal.setLiveState(() => queue.#liveState())
    queue.#adoptReplay(replayed)
    if (replayed.dropped.count > 0) {
      logger.warn(QUEUE_REPLAY_DROPPED, {
        dir, tooLarge: replayed.dropped.tooLarge, beyondBound: replayed.dropped.beyondBound,
        ids: replayed.dropped.ids, kept: queue.#entries.size, maxBodyBytes: bounds.maxBodyBytes, maxJobs: bounds.maxJobs, maxBytes: bounds.maxBytes,
      })
    }
    // Dropped messages are in the file until it is rewritten: compact before the first append.
    if (replayed.dropped.count > 0 || queue.#garbageDominates()) await journal.compactNow(queue.#liveState())
    return queue
  }

  /** Whether the queue takes work now: `writable` is false while its journal cannot be written (readiness reads it). */
  health(): EmbeddedQueueHealth {
    return { ...this.#journal.health(), full: this.#fullEpisode !== undefined }
  }

  stats(): EmbeddedQueueStats {
    return {
      jobs: this.#entries.size, bytes: this.#bytes, journalBytes: this.#journal.bytes, journalLines: this.#journal.lines,
      ...this.#counts, compactions: this.#journal.compactions, writeFailures: this.#journal.health().writeFailures,
    }
  }

  async send(body: string, options: SendOptions = {}): Promise<SendResult> {
    const [outcome] = await this.sendBatch([{ ...options, body }])
    if (outcome === undefined) throw new ServiceError('QUEUE_FAILURE', { message: 'the send had no outcome', data: { reason: QueueFailureReason.UNAVAILABLE } })
    if (outcome.failure !== undefined) throw outcome.failure
    return outcome
  }

  /**
   * Every entry the batch adds goes to disk in one journal append (one write
   * and one sync, shared with any append already waiting: group commit), so
   * a batch of ten costs what one send costs.
   */
  async sendBatch(entries: readonly SendBatchEntry[]): Promise<SendBatchOutcome[]> {
    this.#checkOpen()
    checkBatch(entries)
    const outcomes: (SendBatchOutcome | undefined)[] = entries.map((entry) => this.#refusal(entry))
    if (outcomes.every((o) => o !== undefined)) return outcomes as SendBatchOutcome[]
    // Refused before any state changes while the journal cannot be written.
    await this.#journal.writable()
    this.#checkOpen()
    // From here to the append, nothing awaits: each key check and its insert are one step.
    const added: { index: number, entry: Entry }[] = []
    const answered: { index: number, pending: Entry }[] = []
    const now = this.#clock.now()
    entries.forEach(({ body, delaySeconds, dedupKey: key }, index) => {
      if (outcomes[index] !== undefined) return
      const pending = key === undefined ? undefined : this.#keys.get(key)
      if (pending !== undefined) {
        this.#counts.deduplicated++
        answered.push({ index, pending })
        return
      }
      const size = Buffer.byteLength(body)
      if (this.#entries.size >= this.#bounds.maxJobs || this.#bytes + size > this.#bounds.maxBytes) {
        outcomes[index] = { failure: this.#full() }
        return
      }
      if (this.#fullEpisode !== undefined) {
        this.#logger.info(QUEUE_ROOM_AGAIN, { dir: this.#dir, dropped: this.#fullEpisode.dropped, jobs: this.#entries.size, bytes: this.#bytes })
        this.#fullEpisode = undefined
      }
      added.push({ index, entry: this.#insert(randomUUID(), body, size, key, now + (delaySeconds ?? 0) * 1000) })
    })
    if (added.length > 0) {
      this.#wake()
      const written = this.#appendAndMaybeCompact(added.map(({ entry }) => toSendRecord(entry)))
      written.catch(() => {}) // awaited below; de-duplicated senders may await it too
      for (const { entry } of added) entry.written = written
      try {
        await written
        for (const { index, entry } of added) {
          delete entry.written
          this.#counts.sent++
          outcomes[index] = { messageId: entry.id }
        }
      } catch (error) {
        // The senders are told it failed: unless a receiver already has one, its message goes
        // (a recovery rewrite persists memory, and must not persist what was refused).
        const failure = toServiceError(error, 'QUEUE_FAILURE')
        for (const { index, entry } of added) {
          if (this.#entries.get(entry.id) === entry && entry.count === 0) this.#remove(entry)
          outcomes[index] = { failure }
        }
      }
    }
    // A pending message may still be on its way to disk; its failure is this entry's too.
    for (const { index, pending } of answered) {
      try {
        await pending.written
        outcomes[index] = { messageId: pending.id, deduplicated: true }
      } catch (error) {
        outcomes[index] = { failure: toServiceError(error, 'QUEUE_FAILURE') }
      }
    }
    return outcomes as SendBatchOutcome[]
  }

  async receive(options: ReceiveOptions): Promise<QueueMessage[]> {
    this.#checkOpen()
    checkReceive(options)
    const waitMs = (options.waitSeconds ?? 0) * 1000
    const startedAt = performance.now()
    for (;;) {
      if (this.#closed) return [] // closed during a long poll
      const messages = await this.#take(options.max, options.visibilitySeconds)
      if (messages.length > 0) return messages
      const left = waitMs - (performance.now() - startedAt)
      if (left <= 0 || this.#closed || options.signal?.aborted === true) return []
      await this.#wait(left, options.signal)
    }
  }

  async changeVisibility(receiptHandle: string, seconds: number): Promise<void> {
    this.#checkOpen()
    checkVisibility(seconds)
    const entry = this.#current(receiptHandle)
    const now = this.#clock.now()
    const visibleAt = now + seconds * 1000
    if (visibleAt > (entry.receivedAt ?? now) + RECEIPT_LIFETIME_MS) {
      throw new ServiceError('QUEUE_FAILURE', {
        message: 'visibility cannot reach past twelve hours from the receive',
        data: { reason: QueueFailureReason.VISIBILITY_LIMIT },
      })
    }
    entry.visibleAt = visibleAt
    entry.version++
    this.#schedule(entry)
    if (seconds === 0) this.#wake()
    await this.#journal.append([{ op: 'visibility', id: entry.id, visibleAt }])
  }

  async delete(receiptHandle: string): Promise<void> {
    this.#checkOpen()
    const { id, nonce } = parseReceipt(receiptHandle)
    const entry = this.#entries.get(id)
    if (entry === undefined) return // already deleted or dead-lettered: SQS answers success
    if (entry.receipt !== nonce) throw stale()
    this.#remove(entry)
    await this.#appendAndMaybeCompact([{ op: 'delete', id }])
  }

  async attributes(): Promise<QueueAttributes> {
    this.#checkOpen()
    const redrive = this.#redrive
    return redrive === undefined
      ? {}
      : { redrive: { maxReceiveCount: redrive.maxReceiveCount, deadLetterTarget: redrive.deadLetterQueue.name } }
  }

  /** Ends long polls (they resolve with nothing), finishes pending writes and releases the folder. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#wake()
    await this.#journal.close()
  }

  /** An entry's own refusal, before the journal is asked: its arguments, or a body over `maxBodyBytes`. */
  #refusal(entry: SendBatchEntry): SendBatchOutcome | undefined {
    try {
      checkSend(entry.body, entry)
    } catch (error) {
      return { failure: toServiceError(error, 'QUEUE_FAILURE') }
    }
    const size = Buffer.byteLength(entry.body)
    if (size <= this.#bounds.maxBodyBytes) return undefined
    this.#counts.refusedTooLarge++
    return {
      failure: new ServiceError('QUEUE_FAILURE', {
        message: `the message body exceeds this queue's ${this.#bounds.maxBodyBytes} bytes`,
        data: { reason: QueueFailureReason.TOO_LARGE, bytes: size, maxBodyBytes: this.#bounds.maxBodyBytes },
      }),
    }
  }

  /** Selects, hides and journals up to `max` visible messages; dead-letters the ones over budget. */
  async #take(max: number, visibilitySeconds: number): Promise<QueueMessage[]> {
    const now = this.#clock.now()
    const taken: Entry[] = []
    const deadLetters: Entry[] = []
    const budget = this.#redrive?.maxReceiveCount
    while (taken.length < max) {
      const entry = this.#nextVisible(now)
      if (entry === undefined) break
      if (budget !== undefined && entry.count >= budget) {
        this.#remove(entry)
        deadLetters.push(entry)
        continue
      }
      entry.count++
      entry.receipt = randomBytes(12).toString('base64url')
      entry.receivedAt = now
      entry.visibleAt = now + visibilitySeconds * 1000
      entry.version++
      taken.push(entry)
    }
    // Rescheduled only now, so that a window of 0 cannot hand one message out twice in one receive.
    for (const entry of taken) this.#schedule(entry)
    const records: JournalRecord[] = taken.map((e) => ({
      op: 'receive', id: e.id, receipt: e.receipt!, visibleAt: e.visibleAt, count: e.count, receivedAt: e.receivedAt!,
    }))
    if (deadLetters.length > 0) {
      try {
        await this.#redrive!.deadLetterQueue.#adopt(deadLetters)
      } catch (error) {
        // Not moved: keep them here, visible, and let a later receive try again.
        for (const entry of deadLetters) {
          this.#restore(entry)
          entry.version++
          this.#schedule(entry)
        }
        await this.#journal.append(records)
        throw toServiceError(error, 'QUEUE_FAILURE')
      }
      for (const entry of deadLetters) records.push({ op: 'dead-letter', id: entry.id })
    }
    await this.#appendAndMaybeCompact(records)
    return taken.map((e) => ({ messageId: e.id, receiptHandle: e.id + RECEIPT_SEPARATOR + e.receipt!, body: e.body, receiveCount: e.count }))
  }

  /** Pops stale slots until the top is a live entry visible at `now`. */
  #nextVisible(now: number): Entry | undefined {
    for (;;) {
      const slot = this.#heap.peek()
      if (slot === undefined) return undefined
      const live = this.#entries.get(slot.entry.id) === slot.entry && slot.entry.version === slot.version
      if (live && slot.visibleAt > now) return undefined
      this.#heap.pop()
      if (live) return slot.entry
    }
  }

  /**
   * Messages moved here from a queue whose redrive budget they exhausted.
   * Those beyond this queue's bound are dropped, logged at error and counted:
   * a full dead-letter queue must not stall the source queue's receives.
   */
  async #adopt(entries: readonly Entry[]): Promise<void> {
    this.#checkOpen()
    await this.#journal.writable()
    const now = this.#clock.now()
    const records: SendRecord[] = []
    const dropped: string[] = []
    for (const moved of entries) {
      if (this.#entries.has(moved.id)) continue // a duplicate move after a crash
      if (this.#entries.size >= this.#bounds.maxJobs || this.#bytes + moved.size > this.#bounds.maxBytes) {
        dropped.push(moved.id)
        continue
      }
      const entry = this.#insert(moved.id, moved.body, moved.size, undefined, now)
      records.push(toSendRecord(entry))
    }
    if (dropped.length > 0) {
      this.#counts.deadLettersDropped += dropped.length
      this.#logger.error(DEAD_LETTERS_DROPPED, { dir: this.#dir, ids: dropped.slice(0, DROPPED_IDS_SHOWN), dropped: dropped.length })
    }
    this.#wake()
    await this.#appendAndMaybeCompact(records)
  }

  #full(): ServiceError {
    this.#counts.droppedFull++
    if (this.#fullEpisode === undefined) {
      this.#fullEpisode = { dropped: 0 }
      this.#logger.warn(QUEUE_FULL, { dir: this.#dir, jobs: this.#entries.size, bytes: this.#bytes, maxJobs: this.#bounds.maxJobs, maxBytes: this.#bounds.maxBytes })
    }
    this.#fullEpisode.dropped++
    return new ServiceError('QUEUE_FAILURE', {
      message: 'the queue holds its bound of jobs or bytes; the new message was dropped',
      data: { reason: QueueFailureReason.FULL, jobs: this.#entries.size, bytes: this.#bytes },
    })
  }

  #insert(id: string, body: string, size: number, key: string | undefined, visibleAt: number): Entry {
    const entry: Entry = { id, body, size, key, seq: this.#seq++, visibleAt, count: 0, receipt: null, receivedAt: null, version: 0 }
    this.#restore(entry)
    this.#schedule(entry)
    return entry
  }

  /** Makes `entry` pending: counted against the bound and findable by its key. */
  #restore(entry: Entry): void {
    this.#entries.set(entry.id, entry)
    this.#bytes += entry.size
    if (entry.key !== undefined && !this.#keys.has(entry.key)) this.#keys.set(entry.key, entry)
  }

  #remove(entry: Entry): void {
    if (this.#entries.get(entry.id) !== entry) return
    this.#entries.delete(entry.id)
    this.#bytes -= entry.size
    if (entry.key !== undefined && this.#keys.get(entry.key) === entry) this.#keys.delete(entry.key)
  }

  #schedule(entry: Entry): void {
    this.#heap.push({ visibleAt: entry.visibleAt, seq: entry.seq, entry, version: entry.version })
    // Stale slots surface and drop on their own; rebuild only when they crowd the heap.
    if (this.#heap.size > 2 * this.#entries.size + 1024) {
      this.#heap.clear()
      for (const e of this.#entries.values()) this.#heap.push({ visibleAt: e.visibleAt, seq: e.seq, entry: e, version: e.version })
    }
  }

  /** Takes over the state replay built, in journal order. */
  #adoptReplay(replayed: ReplayState): void {
    for (const entry of replayed.entries.values()) {
      const kept = { ...entry, seq: this.#seq++ }
      this.#restore(kept)
      this.#schedule(kept)
    }
    this.#counts.droppedAtReplay = replayed.dropped.count
  }

  /** Every live message as one absolute record: a compaction snapshot, or the rewrite after a write failure. */
  #liveState(): SendRecord[] {
    return Array.from(this.#entries.values(), toSendRecord)
  }

  async #appendAndMaybeCompact(records: JournalRecord[]): Promise<void> {
    const done = this.#journal.append(records)
    if (this.#garbageDominates()) this.#journal.compact(() => this.#liveState())
    await done
  }

  /**
   * Garbage dominates when the file holds far more lines than live messages
   * need, or far more bytes: the byte test keeps the journal within about
   * twice the live state plus JOURNAL_SLACK_BYTES however long the bodies.
   */
  #garbageDominates(): boolean {
    const lines = this.#journal.lines
    if (lines > this.#compactionFloor && lines > 4 * this.#entries.size) return true
    const live = this.#bytes + RECORD_OVERHEAD_BYTES * this.#entries.size
    return this.#journal.bytes > 2 * live + JOURNAL_SLACK_BYTES
  }

  #current(receiptHandle: string): Entry {
    const { id, nonce } = parseReceipt(receiptHandle)
    const entry = this.#entries.get(id)
    if (entry === undefined || entry.receipt !== nonce) throw stale()
    return entry
  }

  #wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve) => {
      // Also wake when the next hidden message's window ends (by the injected clock).
      const next = this.#heap.peek()
      const untilVisible = next === undefined ? Infinity : Math.max(1, next.visibleAt - this.#clock.now())
      const done = (): void => {
        clearTimeout(timer)
        this.#waiters.delete(done)
        signal?.removeEventListener('abort', done)
        resolve()
      }
      const timer = setTimeout(done, Math.min(ms, untilVisible))
      this.#waiters.add(done)
      signal?.addEventListener('abort', done, { once: true })
    })
  }

  #wake(): void {
    for (const waiter of [...this.#waiters]) waiter()
  }

  #checkOpen(): void {
    if (this.#closed) {
      throw new ServiceError('QUEUE_FAILURE', { message: 'the queue is closed', data: { reason: QueueFailureReason.UNAVAILABLE } })
    }
  }
}

function toSendRecord(e: Entry): SendRecord {
  const record: SendRecord = { op: 'send', id: e.id, body: e.body, visibleAt: e.visibleAt, count: e.count, receipt: e.receipt, receivedAt: e.receivedAt }
  return e.key === undefined ? record : { ...record, key: e.key }
}

type ReplayedEntry = Omit<Entry, 'seq'>

/**
 * The queue's state while the journal streams past, under the same bounds as
 * live sends: a message the bound has no room for when its send record comes
 * is dropped, as a send at that moment would have been. Memory stays within
 * the bound however large the file.
 */
class ReplayState {
  readonly entries = new Map<string, ReplayedEntry>()
  readonly dropped = { count: 0, tooLarge: 0, beyondBound: 0, ids: [] as string[] }
  readonly #bounds: EmbeddedQueueBounds
  #bytes = 0

  constructor(bounds: EmbeddedQueueBounds) {
    this.#bounds = bounds
  }

  apply(record: JournalRecord): void {
    const entry = this.entries.get(record.id)
    switch (record.op) {
      case 'send': {
        if (entry !== undefined) return // replayed again after a compaction snapshot
        const size = Buffer.byteLength(record.body)
        if (size > this.#bounds.maxBodyBytes) return this.#drop(record.id, 'tooLarge')
        if (this.entries.size >= this.#bounds.maxJobs || this.#bytes + size > this.#bounds.maxBytes) return this.#drop(record.id, 'beyondBound')
        this.#bytes += size
        this.entries.set(record.id, {
          id: record.id, body: record.body, size, key: record.key, visibleAt: record.visibleAt, count: record.count,
          receipt: record.receipt ?? null, receivedAt: record.receivedAt ?? null, version: 0,
        })
        return
      }
      case 'receive':
        if (entry === undefined) return
        entry.receipt = record.receipt
        entry.count = record.count
        entry.visibleAt = record.visibleAt
        entry.receivedAt = record.receivedAt
        return
      case 'visibility':
        if (entry !== undefined) entry.visibleAt = record.visibleAt
        return
      case 'delete':
      case 'dead-letter':
        if (entry === undefined) return
        this.entries.delete(record.id)
        this.#bytes -= entry.size
    }
  }

  /** A line too long to read: a send whose body is over any bound this build keeps. */
  overLong(op: string | undefined, id: string | undefined): void {
    if (id !== undefined && this.entries.has(id)) return // a snapshot of a message already kept
    this.#drop(id ?? `(unreadable ${op ?? 'record'})`, 'tooLarge')
  }

  #drop(id: string, why: 'tooLarge' | 'beyondBound'): void {
    this.dropped.count++
    this.dropped[why]++
    if (this.dropped.ids.length < DROPPED_IDS_SHOWN) this.dropped.ids.push(id)
  }
}

function parseReceipt(receiptHandle: unknown): { id: string, nonce: string } {
  if (typeof receiptHandle === 'string') {
    const at = receiptHandle.indexOf(RECEIPT_SEPARATOR)
    if (at > 0 && at < receiptHandle.length - 1) return { id: receiptHandle.slice(0, at), nonce: receiptHandle.slice(at + 1) }
  }
  throw new ServiceError('QUEUE_FAILURE', { message: 'not a receipt handle of this queue', data: { reason: QueueFailureReason.RECEIPT_HANDLE_INVALID } })
}

function stale(): ServiceError {
  return new ServiceError('QUEUE_FAILURE', {
    message: 'the receipt handle names an earlier delivery or a message no longer in the queue',
    data: { reason: QueueFailureReason.RECEIPT_HANDLE_STALE },
  })
}
