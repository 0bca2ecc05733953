/**
 * The embedded queue's durable journal: one append-only file of JSON lines in
 * the queue's folder, replayed on open.
 *
 * Every record states the absolute new state of one message, so replaying a
 * record twice is harmless; that lets compaction snapshot live state while
 * later records are still on their way to the file.
 *
 * Replay streams the file (journal-reader.ts): one line at a time, each
 * bounded by `maxLineBytes`, handed to the queue as it is read. A longer line
 * (a body an older build accepted) is skipped without being held, and
 * reported so the queue can say what it dropped.
 *
 * Durability: `append` resolves only after the bytes are written and
 * fdatasync'ed. Appends that arrive while a write is in flight share the
 * next write and sync (group commit), so concurrent senders cost one fsync.
 * After a failed write or sync (ENOSPC, EIO) the file is not trusted again:
 * the page cache may have dropped the bytes, so appending after them could
 * silently lose records. The journal stops taking appends and recovers by
 * rewriting the whole live state (the queue's snapshot, which is
 * authoritative) to a new file, as compaction does: at the next append
 * (at most once a second) and every RECOVERY_RETRY_MS on its own, so it comes
 * back once space is back. `health()` says whether it takes work now.
 *
 * Crash safety: a kill can leave a torn last line; open ignores it and
 * truncates it away before the first append (which would otherwise glue a new
 * record onto the torn one). Compaction writes a snapshot to a temp file,
 * fsyncs it, renames it over the journal and fsyncs the folder: a crash
 * leaves the old journal or the new one, both complete.
 *
 * One process owns a folder at a time (folder-lock.ts: a flock that dies
 * with its holder).
 */
import { open as openFile, rename, truncate, unlink } from 'node:fs/promises'
import type { FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { ServiceError } from '../errors.js'
import type { Logger } from '../log/logger.js'
import { QueueFailureReason } from './queue.js'
import { syncFolder } from '../fs/sync-folder.js'
import { FolderLock } from './folder-lock.js'
import { scanJournal } from './journal-reader.js'

/** A message as sent, or its whole state in a compaction snapshot. */
export interface SendRecord {
  readonly op: 'send'
  readonly id: string
  readonly body: string
  readonly visibleAt: number
  readonly count: number
  /** Nonce of the current delivery's receipt; null before the first receive. */
  readonly receipt: string | null
  readonly receivedAt: number | null
  /** The send's de-duplication key; absent when it had none. */
  readonly key?: string
}
export interface ReceiveRecord {
  readonly op: 'receive'
  readonly id: string
  readonly receipt: string
  readonly visibleAt: number
  readonly count: number
  readonly receivedAt: number
}
export interface VisibilityRecord {
  readonly op: 'visibility'
  readonly id: string
  readonly visibleAt: number
}
/** Deleted by its receiver, or moved to the dead-letter queue. */
export interface RemoveRecord {
  readonly op: 'delete' | 'dead-letter'
  readonly id: string
}
export type JournalRecord = SendRecord | ReceiveRecord | VisibilityRecord | RemoveRecord

export const JOURNAL_FILE = 'journal.jsonl'
export const COMPACT_FILE = 'journal.compact.tmp'

/** Emitted when a complete journal line cannot be read; that line is skipped. */
export const JOURNAL_LINE_SKIPPED = 'queue journal line unreadable, skipped'
/** Error, once per episode: a write or sync failed and the queue takes no work until a rewrite succeeds. */
export const JOURNAL_WRITE_FAILED = 'queue journal write failed; the queue takes no work until it can write again'
/** Info: the live state was rewritten after a failure and the queue takes work again. */
export const JOURNAL_WRITABLE_AGAIN = 'queue journal writable again'

const RECOVERY_RETRY_MS = 5_000
const RECOVERY_MIN_INTERVAL_MS = 1_000
/** A snapshot is written in pieces of about this size, never as one string. */
const REWRITE_PIECE_BYTES = 256 * 1024

/**
 * The file operations the journal performs, a seam for tests that inject a
 * failing disk. Production uses node:fs/promises.
 */
export interface JournalFiles {
  open(path: string, flags: 'r' | 'a' | 'w'): Promise<FileHandle>
}
export const nodeJournalFiles: JournalFiles = Object.freeze({ open: (path: string, flags: 'r' | 'a' | 'w') => openFile(path, flags) })

export interface JournalHealth {
  /** False while a write failure stands: sends, receives and deletes are refused. */
  readonly writable: boolean
  /** Write or sync failures since open. */
  readonly writeFailures: number
  /** The last failure's error code (ENOSPC, EIO...) while not writable. */
  readonly reason?: string
}

/** Where replay delivers what it reads, in file order. */
export interface JournalReplay {
  record(record: JournalRecord): void
  /** A line over `maxLineBytes`, not parsed: its op and id when its head shows them. */
  overLong(op: string | undefined, id: string | undefined, bytes: number): void
}

export interface JournalOpenOptions {
  readonly logger: Logger
  /** Lines longer than this are skipped unread (JournalReplay.overLong). */
  readonly maxLineBytes: number
  readonly replay: JournalReplay
  readonly files?: JournalFiles
}

interface Batch {
  text: string
  records: number
  readonly done: Promise<void>
  resolve(): void
  reject(error: unknown): void
}

export class QueueJournal {
  readonly #dir: string
  readonly #lock: FolderLock
  readonly #files: JournalFiles
  #handle: FileHandle
  /** Lines in the file, the measure compaction weighs against live state. */
  #lines: number
  #bytes: number
  #pending: Batch | undefined
  #draining: Promise<void> | undefined
  #snapshot: (() => JournalRecord[]) | undefined
  #failure: ServiceError | undefined
  #closed = false
  readonly #logger: Logger
  /** The queue's whole live state, for a rewrite after a failure. */
  #liveState: (() => JournalRecord[]) | undefined
  #writeFailures = 0
  #compactions = 0
  #recovering: Promise<void> | undefined
  #lastRecovery = 0
  #retryTimer: NodeJS.Timeout | undefined

  private constructor(dir: string, lock: FolderLock, files: JournalFiles, handle: FileHandle, lines: number, bytes: number, logger: Logger) {
    this.#dir = dir
    this.#lock = lock
    this.#files = files
    this.#logger = logger
    this.#handle = handle
    this.#lines = lines
    this.#bytes = bytes
  }

  /** Takes the folder's lock, streams the journal into `options.replay` and opens it for appending. */
  static async open(dir: string, options: JournalOpenOptions): Promise<QueueJournal> {
    const { logger, replay } = options
    const files = options.files ?? nodeJournalFiles
    const lock = await FolderLock.take(dir)
    const path = join(dir, JOURNAL_FILE)
    try {
      await unlink(join(dir, COMPACT_FILE)).catch(() => {}) // an interrupted compaction; the journal itself is whole
      let reader: FileHandle | undefined
      try {
        reader = await files.open(path, 'r')
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
      }
      let lines = 0
      let completeBytes = 0
      if (reader !== undefined) {
        try {
          const scan = await scanJournal(reader, options.maxLineBytes, {
            line(text) {
              lines++
              const record = parseRecord(text)
              if (record === undefined) logger.warn(JOURNAL_LINE_SKIPPED, { dir, line: lines })
              else replay.record(record)
            },
            overLong(head, bytes) {
              lines++
              replay.overLong(/"op":"([a-z-]{1,16})"/.exec(head)?.[1], /"id":"([^"\\]{1,64})"/.exec(head)?.[1], bytes)
            },
          })
          completeBytes = scan.completeBytes
          // Measured in bytes, not characters: a torn line may end inside a UTF-8 sequence.
          if (scan.completeBytes < scan.totalBytes) await truncate(path, scan.completeBytes)
        } finally {
          await reader.close()
        }
      }
      const handle = await files.open(path, 'a')
      return new QueueJournal(dir, lock, files, handle, lines, completeBytes, logger)
    } catch (error) {
      await lock.release()
      throw openFailure(error, path, dir)
    }
  }

  get lines(): number { return this.#lines }
  /** Bytes in the journal file, as this process wrote and read it. */
  get bytes(): number { return this.#bytes }
  /** Completed rewrites (compactions and recoveries) since open. */
  get compactions(): number { return this.#compactions }

  /** The queue's live state, which a rewrite after a write failure persists. */
  setLiveState(snapshot: () => JournalRecord[]): void {
    this.#liveState = snapshot
  }

  health(): JournalHealth {
    const code = (this.#failure?.cause as NodeJS.ErrnoException | undefined)?.code
    return this.#failure === undefined
      ? { writable: true, writeFailures: this.#writeFailures }
      : { writable: false, writeFailures: this.#writeFailures, ...(code === undefined ? {} : { reason: code }) }
  }

  /**
   * Resolves when appends are accepted: at once, or after a successful
   * recovery from a standing write failure; rejects while the failure stands.
   * Lets a sender be refused before it changes any state.
   */
  async writable(): Promise<void> {
    if (this.#closed) throw unavailable('the queue is closed')
    if (this.#failure !== undefined) {
      await this.#recover()
      if (this.#failure !== undefined) throw this.#failure
    }
  }

  /** Resolves once the records are durable on disk. */
  async append(records: readonly JournalRecord[]): Promise<void> {
    if (records.length === 0) return
    await this.writable()
    return this.#enqueue(records)
  }

  #enqueue(records: readonly JournalRecord[]): Promise<void> {
    const batch = this.#pending ??= newBatch()
    for (const record of records) batch.text += JSON.stringify(record) + '\n'
    batch.records += records.length
    this.#drain()
    return batch.done
  }

  /**
   * Replaces the journal with `snapshot()`, taken between two writes. Records
   * appended meanwhile land after the snapshot; replaying them again is
   * harmless because every record is absolute state.
   */
  compact(snapshot: () => JournalRecord[]): void {
    if (this.#failure !== undefined || this.#closed) return
    this.#snapshot = snapshot
    this.#drain()
  }

  /** Compacts now and waits for it; for open, before any other write. */
  async compactNow(records: readonly JournalRecord[]): Promise<void> {
    await this.#draining
    try {
      await this.#rewrite(records)
    } catch (cause) {
      await unlink(join(this.#dir, COMPACT_FILE)).catch(() => {})
      this.#failed(cause)
    }
  }

  /** Finishes pending writes, closes the file and releases the lock. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    if (this.#retryTimer !== undefined) clearInterval(this.#retryTimer)
    await this.#recovering
    await this.#draining?.catch(() => {})
    await this.#handle.close().catch(() => {})
    await this.#lock.release()
  }

  #drain(): void {
    this.#draining ??= this.#run().finally(() => { this.#draining = undefined })
  }

  async #run(): Promise<void> {
    while (this.#snapshot !== undefined || this.#pending !== undefined) {
      const snapshot = this.#snapshot
      this.#snapshot = undefined
      const batch = this.#pending
      this.#pending = undefined
      try {
        if (snapshot !== undefined) await this.#rewrite(snapshot())
        if (batch !== undefined) {
          await this.#handle.write(batch.text)
          await this.#handle.datasync()
          this.#lines += batch.records
          this.#bytes += Buffer.byteLength(batch.text)
          batch.resolve()
        }
      } catch (cause) {
        if (snapshot !== undefined) await unlink(join(this.#dir, COMPACT_FILE)).catch(() => {}) // give the space back
        this.#failed(cause)
        batch?.reject(this.#failure)
        const arrivedMeanwhile = this.#pending as Batch | undefined
        arrivedMeanwhile?.reject(this.#failure)
        this.#pending = undefined
        return
      }
    }
  }

  #failed(cause: unknown): void {
    this.#writeFailures++
    const first = this.#failure === undefined
    this.#failure = writeFailure(cause, this.#dir)
    if (!first) return
    this.#logger.error(JOURNAL_WRITE_FAILED, { dir: this.#dir, code: (cause as NodeJS.ErrnoException)?.code, error: String((cause as Error)?.message ?? cause) })
    this.#retryTimer = setInterval(() => { void this.#recover() }, RECOVERY_RETRY_MS)
    this.#retryTimer.unref()
  }

  /**
   * After a failure: rewrites the live state to a new journal file, at most
   * once a second; concurrent callers share one attempt.
   */
  #recover(): Promise<void> {
    if (this.#recovering !== undefined) return this.#recovering
    const snapshot = this.#liveState
    if (this.#failure === undefined || this.#closed || snapshot === undefined || Date.now() - this.#lastRecovery < RECOVERY_MIN_INTERVAL_MS) {
      return Promise.resolve()
    }
    this.#lastRecovery = Date.now()
    this.#recovering = (async () => {
      try {
        await this.#draining?.catch(() => {})
        await this.#rewrite(snapshot())
        this.#failure = undefined
        if (this.#retryTimer !== undefined) clearInterval(this.#retryTimer)
        this.#retryTimer = undefined
        this.#logger.info(JOURNAL_WRITABLE_AGAIN, { dir: this.#dir, writeFailures: this.#writeFailures })
      } catch (cause) {
        this.#writeFailures++
        await unlink(join(this.#dir, COMPACT_FILE)).catch(() => {}) // what it wrote of the rewrite: give the space back
        this.#failure = writeFailure(cause, this.#dir)
      } finally {
        this.#recovering = undefined
      }
    })()
    return this.#recovering
  }

  /** Crash-safe: write the temp file, fsync it, rename it over the journal, fsync the folder. */
  async #rewrite(records: readonly JournalRecord[]): Promise<void> {
    const temp = join(this.#dir, COMPACT_FILE)
    const handle = await this.#files.open(temp, 'w')
    let bytes = 0
    try {
      let piece = ''
      for (const record of records) {
        piece += JSON.stringify(record) + '\n'
        if (piece.length >= REWRITE_PIECE_BYTES) {
          await handle.write(piece)
          bytes += Buffer.byteLength(piece)
          piece = ''
        }
      }
      if (piece !== '') {
        await handle.write(piece)
        bytes += Buffer.byteLength(piece)
      }
      await handle.sync()
    } finally {
      await handle.close()
    }
    await rename(temp, join(this.#dir, JOURNAL_FILE))
    await syncFolder(this.#dir)
    const previous = this.#handle
    this.#handle = await this.#files.open(join(this.#dir, JOURNAL_FILE), 'a')
    this.#lines = records.length
    this.#bytes = bytes
    this.#compactions++
    await previous.close().catch(() => {})
  }
}

function newBatch(): Batch {
  let resolve!: () => void
  let reject!: (error: unknown) => void
  const done = new Promise<void>((res, rej) => { resolve = res; reject = rej })
  // A batch may fail with nobody awaiting it yet; the rejection is still reported to every appender.
  done.catch(() => {})
  return { text: '', records: 0, done, resolve, reject }
}

function parseRecord(line: string): JournalRecord | undefined {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    return undefined
  }
  const r = value as Partial<Record<string, unknown>> | null
  if (r === null || typeof r !== 'object' || typeof r['id'] !== 'string') return undefined
  switch (r['op']) {
    case 'send':
      return typeof r['body'] === 'string' && typeof r['visibleAt'] === 'number' && typeof r['count'] === 'number' &&
        (r['key'] === undefined || typeof r['key'] === 'string')
        ? value as SendRecord : undefined
    case 'receive':
      return typeof r['receipt'] === 'string' && typeof r['visibleAt'] === 'number' && typeof r['count'] === 'number' &&
        typeof r['receivedAt'] === 'number' ? value as ReceiveRecord : undefined
    case 'visibility':
      return typeof r['visibleAt'] === 'number' ? value as VisibilityRecord : undefined
    case 'delete':
    case 'dead-letter':
      return value as RemoveRecord
    default:
      return undefined
  }
}

/** A journal that cannot be opened or read (a directory in its place, no permission): boot prints this message, so it names the file and the cause. */
function openFailure(cause: unknown, path: string, dir: string): ServiceError {
  if (cause instanceof ServiceError) return cause
  const code = (cause as NodeJS.ErrnoException | undefined)?.code
  const detail = cause instanceof Error ? cause.message : String(cause)
  return new ServiceError('QUEUE_FAILURE', {
    message: `the queue journal ${path} could not be opened: ${detail}`, cause,
    data: { reason: QueueFailureReason.UNAVAILABLE, dir, ...(code === undefined ? {} : { code }) },
  })
}

function writeFailure(cause: unknown, dir: string): ServiceError {
  return new ServiceError('QUEUE_FAILURE', {
    message: 'the queue journal could not be written; the queue takes no work until it can write again', cause,
    data: { reason: QueueFailureReason.UNAVAILABLE, dir },
  })
}

function unavailable(message: string): ServiceError {
  return new ServiceError('QUEUE_FAILURE', { message, data: { reason: QueueFailureReason.UNAVAILABLE } })
}
