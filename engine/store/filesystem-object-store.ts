/**
 * The embedded object store: one folder on local disk, no service to run.
 *
 * Layout (flat; `/` in a key is written `%2F`, a character keys never hold):
 *   <key>.json               the sidecar: ETag, publication time, size, metadata
 *                            and the name of the body file it describes
 *   <key>.<version>.body     an immutable body, one per put
 *   .tmp-<random>            a sidecar being written
 *   .lock-<key>              held while a put or delete commits (below)
 *
 * Write order, and why a reader never sees a body without its sidecar or a
 * sidecar without its body:
 *   1. the body goes to a fresh `<key>.<version>.body` that nothing names yet,
 *      hashed as it streams, then fsync;
 *   2. the sidecar naming it goes to `.tmp-*`, fsync, and is renamed over
 *      `<key>.json`, then the folder is fsynced. The rename is the commit
 *      point: before it readers see the old object, after it the new one;
 *   3. the previous body is unlinked.
 * A reader reads the sidecar first and then opens the body it names. If that
 * body is gone (a newer put or a delete committed in between) it reads the
 * sidecar again. Once open, a body stays readable even if unlinked (POSIX).
 *
 * Step 2 (with the read of the previous sidecar before it) runs under a
 * per-key lock file made with O_EXCL, so a conditional put's check and its
 * commit are one step against every other put or delete of the key, in any
 * process on the folder. A lock older than LOCK_STALE_MS is a crashed
 * holder's and is broken.
 *
 * A crash before step 2 leaves an unnamed body or a temp file, invisible to
 * readers; a crash after it leaves an old body. Both are swept on open once
 * older than a grace period (a live writer in another process may still be
 * between steps 1 and 2).
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdir, open, readdir, readFile, rename, stat, unlink } from 'node:fs/promises'
import type { FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { systemClock } from '../clock.js'
import type { Clock } from '../clock.js'
import { ServiceError } from '../errors.js'
import { checkObjectKey, checkObjectMetadata, checkObjectPrefix } from './object-key.js'
import { preconditionFailed, type HeadOptions, type ObjectBody, type ObjectHead, type ObjectMetadata, type ObjectNotModified, type ObjectStore, type PutOptions, type PutResult } from './object-store.js'
import { syncFolder } from '../fs/sync-folder.js'

export interface FilesystemObjectStoreOptions {
  /** The store's folder; created if missing. */
  readonly root: string
  readonly clock?: Clock
  /** Age after which an unnamed body or temp file counts as crash debris. Default one hour. */
  readonly orphanGraceMs?: number
}

interface Sidecar {
  readonly etag: string
  readonly publishedAt: number
  readonly size: number
  readonly metadata: Record<string, string>
  readonly body: string
}

const SIDECAR_SUFFIX = '.json'
const BODY_SUFFIX = /\.[0-9a-f]{16}\.body$/
const TEMP_PREFIX = '.tmp-'
/** A body vanishing between sidecar read and open means a concurrent put; a few retries always settle it. */
const READ_ATTEMPTS = 8
const LOCK_PREFIX = '.lock-'
/** A commit holds the lock for a sidecar write and an fsync: one this old was left by a crash. */
const LOCK_STALE_MS = 30_000
/** How long a put waits for another writer's commit before it fails. */
const LOCK_WAIT_MS = 10_000

export class FilesystemObjectStore implements ObjectStore {
  readonly #root: string
  readonly #clock: Clock

  private constructor(root: string, clock: Clock) {
    this.#root = root
    this.#clock = clock
  }

  /** Creates the folder if needed and sweeps crash debris older than the grace period. */
  static async open(options: FilesystemObjectStoreOptions): Promise<FilesystemObjectStore> {
    const store = new FilesystemObjectStore(options.root, options.clock ?? systemClock)
    try {
      await mkdir(options.root, { recursive: true })
      await store.#sweep(options.orphanGraceMs ?? 3_600_000)
    } catch (error) {
      throw storeFailure(error, 'open')
    }
    return store
  }

  async put(key: string, body: Uint8Array | Readable, metadata: ObjectMetadata, options: PutOptions = {}): Promise<PutResult> {
    checkObjectKey(key)
    checkObjectMetadata(metadata)
    const name = encodeKey(key)
    const bodyName = `${name}.${randomBytes(8).toString('hex')}.body`
    const bodyPath = join(this.#root, bodyName)
    let committed = false
    try {
      const { etag, size } = await writeBody(bodyPath, body)
      const { previous, publishedAt } = await this.#locked(name, async () => {
        const previous = await this.#readSidecar(name)
        if (options.ifNoneMatch === '*' && previous !== undefined) throw preconditionFailed('embedded', key)
        if (options.ifMatch !== undefined && previous?.etag !== options.ifMatch) throw preconditionFailed('embedded', key)
        // Monotonic per key: a re-put always moves the publication time (SPEC.md 2.9),
        // even within one millisecond or under a clock that stood still.
        const now = this.#clock.now()
        const publishedAt = previous !== undefined && previous.publishedAt >= now ? previous.publishedAt + 1 : now
        const sidecar: Sidecar = { etag, publishedAt, size, metadata: { ...metadata }, body: bodyName }
        await this.#writeSidecar(name, sidecar)
        committed = true
        return { previous, publishedAt }
      })
      if (previous !== undefined && previous.body !== bodyName) await unlinkIfPresent(join(this.#root, previous.body))
      return { etag, publishedAt: new Date(publishedAt) }
    } catch (error) {
      if (!committed) await unlinkIfPresent(bodyPath).catch(() => {})
      throw storeFailure(error, 'put')
    }
  }

  async head(key: string, options: HeadOptions = {}): Promise<ObjectHead | ObjectNotModified | undefined> {
    checkObjectKey(key)
    let sidecar: Sidecar | undefined
    try {
      sidecar = await this.#readSidecar(encodeKey(key))
    } catch (error) {
      throw storeFailure(error, 'head')
    }
    if (sidecar === undefined) return undefined
    if (options.ifNoneMatch !== undefined && options.ifNoneMatch === sidecar.etag) {
      return { notModified: true, etag: sidecar.etag }
    }
    return {
      notModified: false, etag: sidecar.etag, publishedAt: new Date(sidecar.publishedAt),
      size: sidecar.size, metadata: { ...sidecar.metadata },
    }
  }

  async get(key: string): Promise<ObjectBody | undefined> {
    checkObjectKey(key)
    const name = encodeKey(key)
    try {
      for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
        const sidecar = await this.#readSidecar(name)
        if (sidecar === undefined) return undefined
        let handle: FileHandle
        try {
          handle = await open(join(this.#root, sidecar.body), 'r')
        } catch (error) {
          if (isNotFound(error)) continue // replaced or deleted meanwhile: read the sidecar again
          throw error
        }
        return {
          stream: handle.createReadStream(), etag: sidecar.etag, publishedAt: new Date(sidecar.publishedAt),
          size: sidecar.size, metadata: { ...sidecar.metadata },
        }
      }
      throw new Error(`the object kept changing during ${READ_ATTEMPTS} read attempts`)
    } catch (error) {
      throw storeFailure(error, 'get')
    }
  }

  async * list(prefix: string): AsyncIterable<string> {
    checkObjectPrefix(prefix)
    let names: string[]
    try {
      names = await readdir(this.#root)
    } catch (error) {
      throw storeFailure(error, 'list')
    }
    const keys = names
      .filter((n) => n.endsWith(SIDECAR_SUFFIX) && !n.startsWith('.'))
      .map((n) => decodeKey(n.slice(0, -SIDECAR_SUFFIX.length)))
      .filter((k) => k.startsWith(prefix))
      .sort()
    yield * keys
  }

  async delete(key: string): Promise<void> {
    checkObjectKey(key)
    const name = encodeKey(key)
    try {
      const sidecar = await this.#locked(name, async () => {
        const sidecar = await this.#readSidecar(name)
        if (sidecar === undefined) return undefined
        // Sidecar first: from that moment readers see no object; the body is then debris.
        await unlinkIfPresent(join(this.#root, name + SIDECAR_SUFFIX))
        await syncFolder(this.#root)
        return sidecar
      })
      if (sidecar !== undefined) await unlinkIfPresent(join(this.#root, sidecar.body))
    } catch (error) {
      throw storeFailure(error, 'delete')
    }
  }

  /** Runs `commit` holding the key's lock file (see the file comment). */
  async #locked<T>(name: string, commit: () => Promise<T>): Promise<T> {
    const lock = join(this.#root, LOCK_PREFIX + name)
    const deadline = Date.now() + LOCK_WAIT_MS
    for (let wait = 2; ; wait = Math.min(wait * 2, 50)) {
      try {
        await (await open(lock, 'wx')).close()
        break
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      }
      const held = await stat(lock).catch(() => undefined)
      if (held !== undefined && Date.now() - held.mtimeMs > LOCK_STALE_MS) {
        await unlinkIfPresent(lock)
        continue
      }
      if (Date.now() > deadline) throw new Error(`the key stayed locked by another writer for ${LOCK_WAIT_MS} ms`)
      await new Promise((resolve) => setTimeout(resolve, wait))
    }
    try {
      return await commit()
    } finally {
      await unlinkIfPresent(lock)
    }
  }

  async #readSidecar(name: string): Promise<Sidecar | undefined> {
    let text: string
    try {
      text = await readFile(join(this.#root, name + SIDECAR_SUFFIX), 'utf8')
    } catch (error) {
      if (isNotFound(error)) return undefined
      throw error
    }
    const value = JSON.parse(text) as Partial<Sidecar>
    if (typeof value.etag !== 'string' || typeof value.publishedAt !== 'number' || typeof value.size !== 'number' ||
      typeof value.body !== 'string' || typeof value.metadata !== 'object' || value.metadata === null ||
      value.body.includes('/')) {
      throw new Error(`the sidecar of ${name} is malformed`)
    }
    return value as Sidecar
  }

  async #writeSidecar(name: string, sidecar: Sidecar): Promise<void> {
    const temp = join(this.#root, `${TEMP_PREFIX}${randomBytes(8).toString('hex')}`)
    try {
      const handle = await open(temp, 'wx')
      try {
        await handle.writeFile(JSON.stringify(sidecar))
        await handle.sync()
      } finally {
        await handle.close()
      }
      await rename(temp, join(this.#root, name + SIDECAR_SUFFIX))
    } catch (error) {
      await unlinkIfPresent(temp).catch(() => {})
      throw error
    }
    await syncFolder(this.#root)
  }

  async #sweep(graceMs: number): Promise<void> {
    const names = await readdir(this.#root)
    const named = new Set<string>()
    for (const n of names) {
      if (!n.endsWith(SIDECAR_SUFFIX) || n.startsWith('.')) continue
      const sidecar = await this.#readSidecar(n.slice(0, -SIDECAR_SUFFIX.length)).catch(() => undefined)
      if (sidecar !== undefined) named.add(sidecar.body)
    }
    const cutoff = this.#clock.now() - graceMs
    for (const n of names) {
      const debris = n.startsWith(TEMP_PREFIX) || (BODY_SUFFIX.test(n) && !named.has(n))
      if (!debris) continue
      const info = await stat(join(this.#root, n)).catch(() => undefined)
      if (info !== undefined && info.mtimeMs < cutoff) await unlinkIfPresent(join(this.#root, n))
    }
  }
}

/** Streams the body into a new file, hashing as it goes; fsyncs before returning. */
async function writeBody(path: string, body: Uint8Array | Readable): Promise<{ etag: string, size: number }> {
  const hash = createHash('sha256')
  let size = 0
  const handle = await open(path, 'wx')
  try {
    if (body instanceof Uint8Array) {
      hash.update(body)
      size = body.byteLength
      await handle.writeFile(body)
    } else {
      for await (const chunk of body) {
        const bytes: Uint8Array = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
        hash.update(bytes)
        size += bytes.byteLength
        await handle.write(bytes)
      }
    }
    await handle.sync()
  } finally {
    await handle.close()
  }
  // Quoted like an HTTP entity tag (RFC 9110 8.8.3), as S3 returns its own.
  return { etag: `"${hash.digest('hex')}"`, size }
}

async function unlinkIfPresent(path: string): Promise<void> {
  try {
    await unlink(path)
  } catch (error) {
    if (!isNotFound(error)) throw error
  }
}

function encodeKey(key: string): string { return key.replaceAll('/', '%2F') }
function decodeKey(name: string): string { return name.replaceAll('%2F', '/') }

function isNotFound(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT'
}

function storeFailure(error: unknown, operation: string): ServiceError {
  if (error instanceof ServiceError) return error
  return new ServiceError('STORE_FAILURE', { cause: error, data: { store: 'embedded', operation } })
}
