/**
 * The cloud object store: S3 (or anything that speaks it) through
 * @aws-sdk/client-s3. Publication time is S3's own `LastModified`, which S3
 * sets on every write, so a re-put of identical bytes moves it (SPEC.md 2.9);
 * it has one-second resolution.
 *
 * A Readable body of unknown length is uploaded in parts (multipart upload)
 * so memory stays bounded to one part, because a plain PutObject needs the
 * length up front. Its ETag then has S3's multipart form; ETags are opaque.
 */
import {
  AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CreateMultipartUploadCommand, DeleteObjectCommand,
  GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client, UploadPartCommand,
} from '@aws-sdk/client-s3'
import type { CompletedPart } from '@aws-sdk/client-s3'
import { Readable } from 'node:stream'
import { ServiceError } from '../errors.js'
import type { Agent as HttpAgent } from 'node:http'
import type { Agent as HttpsAgent } from 'node:https'
import { checkObjectKey, checkObjectMetadata, checkObjectPrefix } from './object-key.js'
import { preconditionFailed, type HeadOptions, type ObjectBody, type ObjectHead, type ObjectMetadata, type ObjectNotModified, type ObjectStore, type PutOptions, type PutResult } from './object-store.js'

export interface S3ClientSettings {
  readonly region: string
  /** For S3-compatible services and tests (e.g. s3rver); unset means AWS. */
  readonly endpoint?: string
  /** Unset: the SDK's default provider chain. */
  readonly credentials?: { readonly accessKeyId: string, readonly secretAccessKey: string }
  /**
   * The Agents the client's connections are made by: the composition root
   * passes engine/upstream/proxied-agents.ts's for a forward proxy (the store
   * knows nothing of egress); unset, the SDK's own.
   */
  readonly agents?: { readonly httpAgent: HttpAgent, readonly httpsAgent: HttpsAgent } | undefined
}

/**
 * An S3 client with the settings this store relies on: path-style addressing
 * (S3-compatible endpoints rarely serve virtual-host buckets), and checksums
 * only where required, because with the SDK default a streamed body goes out
 * aws-chunked and some S3-compatible services store the framing as content
 * (PEERS.md, s3rver trap).
 */
export function createS3Client(settings: S3ClientSettings): S3Client {
  return new S3Client({
    region: settings.region,
    ...(settings.endpoint === undefined ? {} : { endpoint: settings.endpoint }),
    ...(settings.credentials === undefined ? {} : { credentials: { ...settings.credentials } }),
    forcePathStyle: true,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    ...(settings.agents === undefined ? {} : { requestHandler: { ...settings.agents } }),
  })
}

export interface S3ObjectStoreOptions {
  readonly client: S3Client
  readonly bucket: string
  /** Prepended to every key; e.g. `advisories/`. */
  readonly prefix?: string
  /** Part size of streamed uploads; at least 5 MiB (the S3 minimum). Default 8 MiB. */
  readonly partBytes?: number
}

const MIN_PART_BYTES = 5 * 1024 * 1024

export class S3ObjectStore implements ObjectStore {
  readonly #client: S3Client
  readonly #bucket: string
  readonly #prefix: string
  readonly #partBytes: number

  constructor(options: S3ObjectStoreOptions) {
    if (typeof options.bucket !== 'string' || options.bucket === '') throw new TypeError('S3ObjectStore: bucket must be a non-empty string')
    const prefix = options.prefix ?? ''
    checkObjectPrefix(prefix)
    const partBytes = options.partBytes ?? 8 * 1024 * 1024
    if (!Number.isSafeInteger(partBytes) || partBytes < MIN_PART_BYTES) {
      throw new TypeError(`S3ObjectStore: partBytes must be an integer of at least ${MIN_PART_BYTES}`)
    }
    this.#client = options.client
    this.#bucket = options.bucket
    this.#prefix = prefix
    this.#partBytes = partBytes
  }

  async put(key: string, body: Uint8Array | Readable, metadata: ObjectMetadata, options: PutOptions = {}): Promise<PutResult> {
    checkObjectKey(key)
    checkObjectMetadata(metadata)
    const Key = this.#prefix + key
    const conditional = options.ifMatch !== undefined || options.ifNoneMatch !== undefined
    if (conditional && !(body instanceof Uint8Array)) throw new TypeError('S3ObjectStore: a conditional put takes a whole body')
    let etag: string
    try {
      etag = body instanceof Uint8Array
        ? await this.#putWhole(Key, body, metadata, options)
        : await this.#putStream(Key, body, metadata)
    } catch (error) {
      // 412: the condition did not hold; 409: a concurrent conditional write to the key (S3's own answer).
      const status = statusOf(error)
      if (conditional && (status === 412 || status === 409)) throw preconditionFailed('s3', key)
      throw storeFailure(error, 'put')
    }
    // PutObject does not return LastModified: read it back, and only trust it if
    // no other writer replaced the object in between.
    const head = await this.head(key)
    return { etag, publishedAt: head !== undefined && !head.notModified && head.etag === etag ? head.publishedAt : undefined }
  }

  async head(key: string, options: HeadOptions = {}): Promise<ObjectHead | ObjectNotModified | undefined> {
    checkObjectKey(key)
    try {
      const out = await this.#client.send(new HeadObjectCommand({
        Bucket: this.#bucket, Key: this.#prefix + key,
        ...(options.ifNoneMatch === undefined ? {} : { IfNoneMatch: options.ifNoneMatch }),
      }))
      if (out.ETag === undefined) throw new Error('HEAD answered without an ETag')
      return { notModified: false, etag: out.ETag, publishedAt: out.LastModified, size: out.ContentLength ?? 0, metadata: { ...out.Metadata } }
    } catch (error) {
      // A matching conditional HEAD "fails" with 304; the error's name varies, its status does not (PEERS.md).
      const status = statusOf(error)
      if (status === 304 && options.ifNoneMatch !== undefined) return { notModified: true, etag: options.ifNoneMatch }
      if (status === 404) return undefined
      throw storeFailure(error, 'head')
    }
  }

  async get(key: string): Promise<ObjectBody | undefined> {
    checkObjectKey(key)
    try {
      const out = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: this.#prefix + key }))
      const stream = out.Body
      if (!(stream instanceof Readable)) throw new Error('GET answered without a Node stream body')
      if (out.ETag === undefined) {
        stream.destroy()
        throw new Error('GET answered without an ETag')
      }
      return { stream, etag: out.ETag, publishedAt: out.LastModified, size: out.ContentLength ?? 0, metadata: { ...out.Metadata } }
    } catch (error) {
      if (statusOf(error) === 404) return undefined
      throw storeFailure(error, 'get')
    }
  }

  async * list(prefix: string): AsyncIterable<string> {
    checkObjectPrefix(prefix)
    let token: string | undefined
    do {
      let out
      try {
        out = await this.#client.send(new ListObjectsV2Command({
          Bucket: this.#bucket, Prefix: this.#prefix + prefix,
          ...(token === undefined ? {} : { ContinuationToken: token }),
        }))
      } catch (error) {
        throw storeFailure(error, 'list')
      }
      for (const entry of out.Contents ?? []) {
        if (entry.Key !== undefined) yield entry.Key.slice(this.#prefix.length)
      }
      token = out.IsTruncated === true ? out.NextContinuationToken : undefined
    } while (token !== undefined)
  }

  async delete(key: string): Promise<void> {
    checkObjectKey(key)
    try {
      await this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: this.#prefix + key }))
    } catch (error) {
      if (statusOf(error) === 404) return
      throw storeFailure(error, 'delete')
    }
  }

  async #putWhole(Key: string, body: Uint8Array, metadata: ObjectMetadata, options: PutOptions = {}): Promise<string> {
    const out = await this.#client.send(new PutObjectCommand({
      Bucket: this.#bucket, Key, Body: body, ContentLength: body.byteLength, Metadata: { ...metadata },
      ...(options.ifMatch === undefined ? {} : { IfMatch: options.ifMatch }),
      ...(options.ifNoneMatch === undefined ? {} : { IfNoneMatch: options.ifNoneMatch }),
    }))
    if (out.ETag === undefined) throw new Error('PUT answered without an ETag')
    return out.ETag
  }

  /** One part buffered at a time; a body that fits in one part is a plain PUT. */
  async #putStream(Key: string, body: Readable, metadata: ObjectMetadata): Promise<string> {
    let chunks: Uint8Array[] = []
    let buffered = 0
    let uploadId: string | undefined
    const parts: CompletedPart[] = []
    const flushPart = async (): Promise<void> => {
      const part = Buffer.concat(chunks, buffered)
      chunks = []
      buffered = 0
      if (uploadId === undefined) {
        const created = await this.#client.send(new CreateMultipartUploadCommand({ Bucket: this.#bucket, Key, Metadata: { ...metadata } }))
        if (created.UploadId === undefined) throw new Error('CreateMultipartUpload answered without an UploadId')
        uploadId = created.UploadId
      }
      const PartNumber = parts.length + 1
      const out = await this.#client.send(new UploadPartCommand({
        Bucket: this.#bucket, Key, UploadId: uploadId, PartNumber, Body: part, ContentLength: part.byteLength,
      }))
      parts.push({ PartNumber, ETag: out.ETag })
    }
    try {
      for await (const chunk of body) {
        const bytes: Uint8Array = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
        chunks.push(bytes)
        buffered += bytes.byteLength
        if (buffered >= this.#partBytes) await flushPart()
      }
      if (uploadId === undefined) return await this.#putWhole(Key, Buffer.concat(chunks, buffered), metadata)
      if (buffered > 0) await flushPart()
      const done = await this.#client.send(new CompleteMultipartUploadCommand({
        Bucket: this.#bucket, Key, UploadId: uploadId, MultipartUpload: { Parts: parts },
      }))
      if (done.ETag === undefined) throw new Error('CompleteMultipartUpload answered without an ETag')
      return done.ETag
    } catch (error) {
      body.destroy()
      if (uploadId !== undefined) {
        await this.#client.send(new AbortMultipartUploadCommand({ Bucket: this.#bucket, Key, UploadId: uploadId })).catch(() => {})
      }
      throw error
    }
  }
}

function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode
}

function storeFailure(error: unknown, operation: string): ServiceError {
  if (error instanceof ServiceError) return error
  return new ServiceError('STORE_FAILURE', { cause: error, data: { store: 's3', operation, status: statusOf(error) } })
}
