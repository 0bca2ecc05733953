/**
 * The embedded queue: SQS semantics (queue.ts) kept in one folder on local
 * disk, with no service to run (DESIGN.md, "Embedded by default").
 *
 * State lives in memory and in an append-only journal (queue-journal.ts):
 * - `send` resolves only once its record is fsynced, so a process killed
 *   with SIGKILL after `send` resolved loses nothing;
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
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdir } from 'node:fs/promises'
import { basename, resolve } from 'node:path'
import { systemClock } from '../clock.js'
import type { Clock } from '../clock.js'
import { ServiceError, toServiceError } from '../errors.js'
import { silentLogger } from '../log/logger.js'
import type { Logger } from '../log/logger.js'
import { checkReceive, checkSend, checkVisibility } from './queue-arguments.js'
import { QueueJournal } from './queue-journal.js'
import type { JournalHealth, JournalRecord, SendRecord } from './queue-journal.js'
import { QUEUE_LIMITS, QueueFailureReason } from './queue.js'
import type { Queue, QueueAttributes, QueueMessage, ReceiveOptions, SendOptions } from './queue.js'
import { VisibilityHeap } from './visibility-heap.js'

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
}

interface Entry {
  readonly id: string
  readonly body: string
  readonly seq: number
  visibleAt: number
  count: number
  receipt: string | null
  receivedAt: number | null
  /** Bumped on every change; heap entries with an older version are stale. */
  version: number
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

export class EmbeddedQueue implements Queue {
  readonly name: string
  readonly #dir: string
  readonly #journal: QueueJournal
  readonly #clock: Clock
  readonly #redrive: EmbeddedRedrive | undefined
  readonly #compactionFloor: number
  readonly #entries = new Map<string, Entry>()
  readonly #heap = new VisibilityHeap<Slot>()
  readonly #waiters = new Set<() => void>()
  #seq = 0
  #closed = false

  private constructor(dir: string, journal: QueueJournal, options: EmbeddedQueueOptions) {
    this.name = options.name ?? basename(dir)
    this.#dir = dir
    this.#journal = journal
    this.#clock = options.clock ?? systemClock
    this.#redrive = options.redrive
    this.#compactionFloor = options.compactionFloor ?? 1024
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
    let opened: Awaited<ReturnType<typeof QueueJournal.open>>
    try {
      await mkdir(dir, { recursive: true })
      opened = await QueueJournal.open(dir, options.logger ?? silentLogger)
    } catch (error) {
      throw toServiceError(error, 'QUEUE_FAILURE')
    }
    const queue = new EmbeddedQueue(dir, opened.journal, options)
    opened.journal.setLiveState(() => queue.#liveState())
    for (const record of opened.records) queue.#replay(record)
    for (const entry of queue.#entries.values()) queue.#schedule(entry)
    return queue
  }

  /** Whether the queue takes work now (false while its journal cannot be written), for readiness. */
  health(): JournalHealth {
    return this.#journal.health()
  }

  async send(body: string, options: SendOptions = {}): Promise<{ messageId: string }> {
    this.#checkOpen()
    checkSend(body, options)
    const id = randomUUID()
    const visibleAt = this.#clock.now() + (options.delaySeconds ?? 0) * 1000
    await this.#admit(id, body, visibleAt)
    return { messageId: id }
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
    this.#entries.delete(id)
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
        this.#entries.delete(entry.id)
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
          this.#entries.set(entry.id, entry)
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

  /** Messages moved here from a queue whose redrive budget they exhausted. */
  async #adopt(entries: readonly Entry[]): Promise<void> {
    this.#checkOpen()
    const now = this.#clock.now()
    const records: SendRecord[] = []
    for (const moved of entries) {
      if (this.#entries.has(moved.id)) continue // a duplicate move after a crash
      const entry = this.#insert(moved.id, moved.body, now)
      records.push(toSendRecord(entry))
    }
    this.#wake()
    await this.#appendAndMaybeCompact(records)
  }

  async #admit(id: string, body: string, visibleAt: number): Promise<void> {
    const entry = this.#insert(id, body, visibleAt)
    this.#wake()
    await this.#appendAndMaybeCompact([toSendRecord(entry)])
  }

  #insert(id: string, body: string, visibleAt: number): Entry {
    const entry: Entry = { id, body, seq: this.#seq++, visibleAt, count: 0, receipt: null, receivedAt: null, version: 0 }
    this.#entries.set(id, entry)
    this.#schedule(entry)
    return entry
  }

  #schedule(entry: Entry): void {
    this.#heap.push({ visibleAt: entry.visibleAt, seq: entry.seq, entry, version: entry.version })
    // Stale slots surface and drop on their own; rebuild only when they crowd the heap.
    if (this.#heap.size > 2 * this.#entries.size + 1024) {
      this.#heap.clear()
      for (const e of this.#entries.values()) this.#heap.push({ visibleAt: e.visibleAt, seq: e.seq, entry: e, version: e.version })
    }
  }

  #replay(record: JournalRecord): void {
    const entry = this.#entries.get(record.id)
    switch (record.op) {
      case 'send': {
        if (entry !== undefined) return // replayed again after a compaction snapshot
        this.#entries.set(record.id, {
          id: record.id, body: record.body, seq: this.#seq++, visibleAt: record.visibleAt, count: record.count,
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
        this.#entries.delete(record.id)
    }
  }

  /** Every live message as one absolute record: a compaction snapshot, or the rewrite after a write failure. */
  #liveState(): SendRecord[] {
    return Array.from(this.#entries.values(), toSendRecord)
  }

  async #appendAndMaybeCompact(records: JournalRecord[]): Promise<void> {
    const done = this.#journal.append(records)
    // Garbage dominates when the file holds far more lines than live messages need.
    if (this.#journal.lines > this.#compactionFloor && this.#journal.lines > 4 * this.#entries.size) {
      this.#journal.compact(() => this.#liveState())
    }
    await done
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
  return { op: 'send', id: e.id, body: e.body, visibleAt: e.visibleAt, count: e.count, receipt: e.receipt, receivedAt: e.receivedAt }
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
