/**
 * The object store: where Pilot publishes the advisory-database artifact and
 * the proxy polls for it (SPEC.md 2.9, 3.4, 3.5). One interface with an
 * embedded implementation (files on local disk) and a cloud one (S3); both
 * run the same test suite (test/store/store.suite.ts).
 *
 * Contract every implementation keeps:
 * - `put` replaces the whole object atomically: a reader sees the old object
 *   or the new one, never a mix and never a part. Every put moves the
 *   publication time, even when the bytes are unchanged, because SPEC.md 2.9
 *   makes the object's own publication time the push time.
 * - ETags are opaque strings that change when the bytes change; compare them
 *   verbatim (quotes included).
 * - An absent object is `undefined`, never an error; every other failure is a
 *   ServiceError with code STORE_FAILURE.
 * - Keys and metadata are checked the same way everywhere (object-key.ts), so
 *   a key the embedded store accepts is one S3 accepts, and the reverse.
 * - A conditional put (`ifMatch`, `ifNoneMatch: '*'`) whose condition does not
 *   hold writes nothing and fails with STORE_FAILURE, `data.reason`
 *   `precondition-failed` (`isPreconditionFailed`): a read-modify-write (the
 *   policy commands) learns that another writer came between. The embedded
 *   store checks it under a per-key lock; S3 sends `If-Match` /
 *   `If-None-Match`, which AWS S3 honours and some S3-compatible services
 *   ignore (s3rver does: there the last writer wins).
 */
import type { Readable } from 'node:stream'
import { isServiceError, ServiceError } from '../errors.js'

/** User metadata: lower-case keys, printable ASCII values (object-key.ts). */
export type ObjectMetadata = Readonly<Record<string, string>>

export interface PutResult {
  readonly etag: string
  /** The publication time the store recorded, when the store reports it. */
  readonly publishedAt: Date | undefined
}

export interface ObjectHead {
  readonly notModified: false
  readonly etag: string
  /**
   * The object's publication time. `undefined` when the store does not give
   * one: SPEC.md 3.5 treats such an artifact as expired.
   */
  readonly publishedAt: Date | undefined
  readonly size: number
  readonly metadata: ObjectMetadata
}

/** A conditional HEAD whose ETag matched: the object is unchanged. */
export interface ObjectNotModified {
  readonly notModified: true
  readonly etag: string
}

export interface ObjectBody {
  /** The bytes. The caller MUST consume or destroy it, or a descriptor (or socket) leaks. */
  readonly stream: Readable
  readonly etag: string
  readonly publishedAt: Date | undefined
  readonly size: number
  readonly metadata: ObjectMetadata
}

export interface HeadOptions {
  /** Answer `{ notModified: true }` when the current ETag equals this one. */
  readonly ifNoneMatch?: string
}

/** A put's condition on the object it replaces. */
export interface PutOptions {
  /** Write only when the object exists with this ETag. */
  readonly ifMatch?: string
  /** `*`: write only when no object exists under the key. */
  readonly ifNoneMatch?: '*'
}

/** The failure of a conditional put whose condition did not hold. */
export function preconditionFailed(store: string, key: string): ServiceError {
  return new ServiceError('STORE_FAILURE', { message: `the object ${key} changed since it was read`, data: { store, operation: 'put', reason: 'precondition-failed' } })
}

export function isPreconditionFailed(error: unknown): boolean {
  return isServiceError(error, 'STORE_FAILURE') && error.data?.['reason'] === 'precondition-failed'
}

export interface ObjectStore {
  put(key: string, body: Uint8Array | Readable, metadata: ObjectMetadata, options?: PutOptions): Promise<PutResult>
  head(key: string, options?: HeadOptions): Promise<ObjectHead | ObjectNotModified | undefined>
  get(key: string): Promise<ObjectBody | undefined>
  /** Keys that start with `prefix`, in lexicographic (UTF-8 byte) order. */
  list(prefix: string): AsyncIterable<string>
  /** Removes the object; removing an absent object succeeds. */
  delete(key: string): Promise<void>
}
