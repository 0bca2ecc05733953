/**
 * Kept upstream documents in a folder (`cache.warmPath`, bounded by
 * `cache.warmMaxBytes`): the local backend's warm restart (issue 29 item 4,
 * docs/cache.md "Warm restarts on the local backend"). A restarted
 * single-node proxy finds the documents it read before, and its first read
 * of each is a conditional request: a 304 costs no body.
 *
 * One file per package side, named by a digest of its key:
 * `u32 header length (big endian) | header JSON | body`, the header naming
 * the key, the validators, the body's length and its SHA-256. A file is
 * written to a temporary name and renamed into place, so a reader sees a
 * whole old file or a whole new one; a file a crash left short or a disk
 * corrupted fails its length or digest check on read, and is then deleted
 * and counted `corrupt`, never served. Temporary files left by a crash are
 * deleted at open.
 *
 * The bound: the files' bytes, least recently used deleted first (recency
 * survives a restart as the files' modification times, touched on use); a
 * document over an eighth of the bound is not kept. One process owns the
 * folder (an flock, engine/queue/folder-lock.ts): a second one on the same
 * folder keeps nothing rather than break the first one's bound.
 */
import { createHash } from 'node:crypto'
import { mkdir, open, readdir, readFile, rename, stat, unlink, utimes } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from '../log/logger.js'
import { FolderLock } from '../queue/folder-lock.js'
import { documentKey, KeepCounters, type DocumentKeep, type DocumentRef, type KeptDocument } from './document-keep.js'

/** warn: the folder is held by another process or cannot be used; this process keeps no documents. */
export const WARM_FOLDER_UNAVAILABLE = 'warm document folder unavailable; documents are not kept'

const SUFFIX = '.doc'
const TEMPORARY = '.tmp'
/** Writes in flight at once, at most; and their bytes: past either a new document is not kept (counted failed). */
const MAX_WRITES = 8
const MAX_PENDING_BYTES = 64 * 1024 * 1024

interface Header {
  readonly key: string
  readonly etag?: string
  readonly lastModified?: string
  readonly contentType?: string
  readonly bytes: number
  readonly sha256: string
}

function fileOf(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 40) + SUFFIX
}


export interface DiskDocumentKeepOptions {
  readonly dir: string
  /** `cache.warmMaxBytes`: the files' bytes at most. */
  readonly maxBytes: number
  readonly logger: Logger
}

export class DiskDocumentKeep implements DocumentKeep {
  readonly counters = new KeepCounters()
  readonly #dir: string
  readonly #maxBytes: number
  readonly #logger: Logger
  #lock: FolderLock | undefined
  /** File name to its bytes, least recently used first. */
  readonly #files = new Map<string, number>()
  #bytes = 0
  #writes = 0
  #pendingBytes = 0
  /** Per file, the write in flight: a newer one waits for it (the last write wins the rename). */
  readonly #writing = new Map<string, Promise<void>>()

  private constructor(options: DiskDocumentKeepOptions, lock: FolderLock | undefined) {
    this.#dir = options.dir
    this.#maxBytes = options.maxBytes
    this.#logger = options.logger
    this.#lock = lock
  }

  /** Opens (and creates) the folder and reads what it holds; a folder it cannot own gives a keep that keeps nothing. */
  static async open(options: DiskDocumentKeepOptions): Promise<DiskDocumentKeep> {
    let lock: FolderLock | undefined
    try {
      await mkdir(options.dir, { recursive: true })
      lock = await FolderLock.take(options.dir)
    } catch (error) {
      options.logger.warn(WARM_FOLDER_UNAVAILABLE, { path: options.dir, error: error instanceof Error ? error.message : String(error) })
      return new DiskDocumentKeep({ ...options, maxBytes: 0 }, undefined)
    }
    const keep = new DiskDocumentKeep(options, lock)
    await keep.#scan()
    return keep
  }

  /** Bytes of the kept files. */
  get residentBytes(): number { return this.#bytes }
  get entries(): number { return this.#files.size }

  async get(ref: DocumentRef, charge: (bytes: number) => Promise<void> | undefined): Promise<KeptDocument | undefined> {
    const key = documentKey(ref)
    const file = fileOf(key)
    const size = this.#files.get(file)
    if (size === undefined) return undefined
    await charge(size)
    let bytes: Buffer
    try {
      bytes = await readFile(join(this.#dir, file))
    } catch {
      this.#forget(file)
      this.counters.failed++
      return undefined
    }
    const document = this.#parse(bytes, key)
    if (document === undefined) {
      this.counters.corrupt++
      this.#remove(file)
      return undefined
    }
    this.#touch(file, bytes.byteLength)
    return document
  }

  keep(ref: DocumentRef, document: KeptDocument): void {
    if (this.#lock === undefined || (document.etag === undefined && document.lastModified === undefined)) return
    const size = document.chunks.reduce((n, c) => n + c.byteLength, 0)
    if (size > this.#maxBytes / 8 || this.#writes >= MAX_WRITES || this.#pendingBytes + size > MAX_PENDING_BYTES) {
      this.counters.failed++
      return
    }
    const key = documentKey(ref)
    const file = fileOf(key)
    this.#writes++
    this.#pendingBytes += size
    const previous = this.#writing.get(file) ?? Promise.resolve()
    const write = previous.then(() => this.#write(file, key, document, size)).catch(() => { this.counters.failed++ }).finally(() => {
      this.#writes--
      this.#pendingBytes -= size
      if (this.#writing.get(file) === write) this.#writing.delete(file)
    })
    this.#writing.set(file, write)
  }

  drop(ref: DocumentRef): void {
    const file = fileOf(documentKey(ref))
    if (this.#files.has(file)) this.#remove(file)
  }

  /** Waits for the writes in flight, then lets the folder go. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.#writing.values()])
    const lock = this.#lock
    this.#lock = undefined
    await lock?.release()
  }

  async #scan(): Promise<void> {
    const names = await readdir(this.#dir)
    const found: { name: string, bytes: number, used: number }[] = []
    for (const name of names) {
      const path = join(this.#dir, name)
      if (name.endsWith(TEMPORARY)) {
        await unlink(path).catch(() => undefined)
        continue
      }
      if (!name.endsWith(SUFFIX)) continue
      const info = await stat(path).catch(() => undefined)
      if (info?.isFile() === true) found.push({ name, bytes: info.size, used: info.mtimeMs })
    }
    found.sort((a, b) => a.used - b.used)
    for (const f of found) {
      this.#files.set(f.name, f.bytes)
      this.#bytes += f.bytes
    }
    this.#evict()
  }

  #parse(bytes: Buffer, key: string): KeptDocument | undefined {
    try {
      if (bytes.byteLength < 4) return undefined
      const length = bytes.readUInt32BE(0)
      if (4 + length > bytes.byteLength) return undefined
      const header = JSON.parse(bytes.subarray(4, 4 + length).toString('utf8')) as Header
      const body = bytes.subarray(4 + length)
      if (header.key !== key || header.bytes !== body.byteLength) return undefined
      if (createHash('sha256').update(body).digest('hex') !== header.sha256) return undefined
      // A fresh buffer of its own: the render may transfer it to a pool thread.
      const copy = new Uint8Array(body.byteLength)
      copy.set(body)
      return { etag: header.etag, lastModified: header.lastModified, contentType: header.contentType, chunks: [copy] }
    } catch {
      return undefined
    }
  }

  async #write(file: string, key: string, document: KeptDocument, size: number): Promise<void> {
    const digest = createHash('sha256')
    for (const chunk of document.chunks) digest.update(chunk)
    const header: Header = {
      key,
      ...(document.etag === undefined ? {} : { etag: document.etag }),
      ...(document.lastModified === undefined ? {} : { lastModified: document.lastModified }),
      ...(document.contentType === undefined ? {} : { contentType: document.contentType }),
      bytes: size,
      sha256: digest.digest('hex'),
    }
    const json = Buffer.from(JSON.stringify(header), 'utf8')
    const prefix = Buffer.allocUnsafe(4)
    prefix.writeUInt32BE(json.byteLength, 0)
    const temporary = join(this.#dir, `${file}.${process.pid}.${Math.random().toString(36).slice(2)}${TEMPORARY}`)
    const handle = await open(temporary, 'w')
    try {
      await handle.writev([prefix, json, ...document.chunks])
    } catch (error) {
      await handle.close().catch(() => undefined)
      await unlink(temporary).catch(() => undefined)
      throw error
    }
    await handle.close()
    await rename(temporary, join(this.#dir, file))
    this.counters.written++
    this.#forget(file)
    this.#files.set(file, 4 + json.byteLength + size)
    this.#bytes += 4 + json.byteLength + size
    this.#evict()
  }

  /** Marks a file most recently used, here and on disk (its modification time orders the next open). */
  #touch(file: string, bytes: number): void {
    this.#forget(file)
    this.#files.set(file, bytes)
    this.#bytes += bytes
    const now = new Date()
    void utimes(join(this.#dir, file), now, now).catch(() => undefined)
  }

  #evict(): void {
    while (this.#bytes > this.#maxBytes) {
      const oldest = this.#files.keys().next()
      if (oldest.done === true) break
      this.counters.evicted++
      this.#remove(oldest.value)
    }
  }

  #remove(file: string): void {
    this.#forget(file)
    void unlink(join(this.#dir, file)).catch(() => undefined)
  }

  #forget(file: string): void {
    const bytes = this.#files.get(file)
    if (bytes === undefined) return
    this.#files.delete(file)
    this.#bytes -= bytes
  }
}
