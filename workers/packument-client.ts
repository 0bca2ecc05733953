/**
 * The pool side of the packument task: moves the documents' chunks to a
 * worker, answers its charge request through the memory gate, and turns the
 * result back into a PackumentOutcome or a ServiceError.
 *
 * The pool is built by a role's composition root, e.g.
 *   new Piscina({ filename: new URL('../workers/packument-task.js', import.meta.url).href, ... })
 * from dist/ (see packument-task.ts for running from source under tap).
 */
import { MessageChannel } from 'node:worker_threads'
import type { Piscina } from 'piscina'
import type { Ecosystem } from '../engine/advisory/artifact/database.js'
import { isServiceError, ServiceError, toServiceError } from '../engine/errors.js'
import type { PackumentOutcome } from '../engine/packument/pipeline.js'
import { NO_STRUCTURE_LIMITS, type StructureLimits } from '../engine/packument/scanner.js'
import type { ChargeReply, ChargeRequest, GateModule, PackumentTaskInput, PackumentTaskResult, SerializedError } from './packument-messages.js'
import { move, MovableMessage } from './packument-messages.js'

export interface PackumentJob {
  readonly packageName: string
  readonly baseUrl: string
  readonly abbreviated: boolean
  /** The npm audit view: withheld versions listed, marked (engine/packument/render-variant.ts). */
  readonly listWithheld?: boolean
  readonly ecosystem?: Ecosystem
  readonly limits?: StructureLimits
  readonly now: number
  /** The documents' chunks. They are moved to the worker: the caller must not touch them afterwards. */
  readonly privateChunks?: readonly Uint8Array[] | undefined
  readonly publicChunks?: readonly Uint8Array[] | undefined
  /**
   * The upstream's ETag response header of each document, as received
   * (`W/` prefix and quotes included). When every document present has a
   * strong one, the body's ETag is derived from them instead of hashed.
   */
  readonly privateEtag?: string | undefined
  readonly publicEtag?: string | undefined
  readonly gate: GateModule
  /**
   * Charges `bytes` against the memory gate; resolves when granted, rejects
   * with a ServiceError (e.g. GATE_PAUSE_TIMEOUT) when refused. The charge
   * is the request's to return when it ends.
   */
  readonly charge: (bytes: number, basisBytes: number) => Promise<void>
  readonly signal?: AbortSignal
}

/**
 * The ArrayBuffer of a chunk, transferable: the chunk's own buffer when the
 * chunk spans all of it, else a copy (a view into a shared pool slab must not
 * take the slab, nor detach it under its other users).
 */
export function transferable(chunk: Uint8Array): ArrayBuffer {
  const buffer = chunk.buffer
  if (buffer instanceof ArrayBuffer && chunk.byteOffset === 0 && chunk.byteLength === buffer.byteLength) return buffer
  // Uint8Array.prototype.slice copies; a Buffer's own slice() would not (it is a view).
  return Uint8Array.prototype.slice.call(chunk).buffer as ArrayBuffer
}

/** A channel whose first port answers the task's charge requests through `charge`; the second goes to the task. */
export function chargeChannel(charge: (bytes: number, basisBytes: number) => Promise<void>): MessageChannel {
  const channel = new MessageChannel()
  const { port1 } = channel
  port1.on('message', (request: ChargeRequest) => {
    // Through a promise, so that a charge function that throws at once is a refusal, not an uncaught error.
    Promise.resolve().then(() => charge(request.bytes, request.basisBytes)).then(
      () => port1.postMessage({ type: 'granted' } satisfies ChargeReply),
      (error: unknown) => port1.postMessage({ type: 'refused', code: isServiceError(error) ? error.code : 'INTERNAL' } satisfies ChargeReply),
    )
  })
  return channel
}

/** A pool rejection as a ServiceError: a worker that ran out of heap is its own code (STYLE.md rule 6). */
export function poolFailure(error: unknown): ServiceError {
  if ((error as { code?: unknown } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY') {
    return new ServiceError('WORKER_OUT_OF_MEMORY', { cause: error })
  }
  return toServiceError(error)
}

/** A task's serialized error, thrown again on the main thread. */
export function revived(error: SerializedError): ServiceError {
  const { code, message, data, retryAfter } = error
  return new ServiceError(code, { message, ...(data === undefined ? {} : { data }), ...(retryAfter === undefined ? {} : { retryAfter }) })
}

export async function runPackumentTask(pool: Piscina, job: PackumentJob): Promise<PackumentOutcome> {
  const privateChunks = job.privateChunks?.map(transferable)
  const publicChunks = job.publicChunks?.map(transferable)
  const { port1, port2 } = chargeChannel(job.charge)
  const input: PackumentTaskInput = {
    packageName: job.packageName,
    baseUrl: job.baseUrl,
    abbreviated: job.abbreviated,
    listWithheld: job.listWithheld === true,
    ecosystem: job.ecosystem ?? 'js',
    limits: job.limits ?? NO_STRUCTURE_LIMITS,
    now: job.now,
    privateChunks,
    publicChunks,
    privateEtag: job.privateEtag,
    publicEtag: job.publicEtag,
    gate: job.gate,
    port: port2,
  }
  const transfer = [...(privateChunks ?? []), ...(publicChunks ?? []), port2]
  let result: PackumentTaskResult
  try {
    result = await pool.run(move(new MovableMessage(input, transfer)), job.signal === undefined ? {} : { signal: job.signal }) as PackumentTaskResult
  } catch (error) {
    // The worker died or the task was aborted; the caller returns the
    // request's charges on any rejection, as at the end of every request.
    throw poolFailure(error)
  } finally {
    port1.close()
  }
  if (!result.ok) throw revived(result.error)
  return {
    body: result.body === undefined ? undefined : new Uint8Array(result.body),
    etag: result.etag,
    counts: result.counts,
    selected: result.selected,
    observations: result.observations,
    dropped: result.dropped,
    advisoryAnswered: result.advisoryAnswered,
    withholding: result.withholding,
    basisBytes: result.basisBytes,
    regateAt: result.regateAt,
    notice: result.notice,
  }
}
