/**
 * The message shapes of the packument task, shared by the pool side
 * (packument-client.ts) and the thread side (packument-task.ts), as
 * piscina's own src/common.ts keeps them in one file.
 *
 * Bytes cross the thread boundary by transfer, never by copy: the task and
 * its result are wrapped in MovableMessage and passed through Piscina.move,
 * so piscina transfers the listed ArrayBuffers (and the charge port).
 */
import type { MessagePort } from 'node:worker_threads'
import { Piscina } from 'piscina'
import type { Ecosystem } from '../engine/advisory/artifact/database.js'
import type { ErrorCode } from '../engine/errors.js'
import type { Decide } from '../engine/packument/merge.js'
import type { StructureLimits } from '../engine/packument/scanner.js'
import type { PackumentOutcome } from '../engine/packument/pipeline.js'

/**
 * Where the worker gets its gate. `module` is a file URL of an ES module that
 * exports `createDecide: GateFactory`; `options` is whatever that factory
 * needs and must survive structured cloning (rules, a SharedArrayBuffer of
 * the advisory database, the maximum push age...). The worker imports each
 * module once and keeps it.
 */
export interface GateModule {
  readonly module: string
  readonly options: unknown
}

/** What a gate module exports as `createDecide`. `now` is the task's clock reading, ms since the epoch. */
export type GateFactory = (options: unknown, now: number) => Decide

export interface PackumentTaskInput {
  readonly packageName: string
  readonly baseUrl: string
  readonly abbreviated: boolean
  /** The npm audit view (engine/packument/render-variant.ts). */
  readonly listWithheld: boolean
  readonly ecosystem: Ecosystem
  readonly limits: StructureLimits
  /** The main thread's clock reading for this request, ms since the epoch. */
  readonly now: number
  /** The documents' chunks in order; transferred. Absent: no such upstream document. */
  readonly privateChunks: ArrayBuffer[] | undefined
  readonly publicChunks: ArrayBuffer[] | undefined
  /** The upstreams' ETags of those documents, as received; when strong, the body's tag is derived from them (engine/packument/derived-etag.ts). */
  readonly privateEtag: string | undefined
  readonly publicEtag: string | undefined
  readonly gate: GateModule
  /** The charge channel (ChargeRequest out, ChargeReply back); transferred. */
  readonly port: MessagePort
}

/**
 * Sent once, before rendering: charge the response's share of the memory
 * budget (SPEC.md 8.1). `bytes` is already the charge (2.0 per basis byte
 * for `js`); `basisBytes` is the output basis it came from.
 */
export interface ChargeRequest {
  readonly type: 'charge'
  readonly bytes: number
  readonly basisBytes: number
}

export type ChargeReply =
  | { readonly type: 'granted' }
  | { readonly type: 'refused'; readonly code: ErrorCode }

export interface SerializedError {
  readonly code: ErrorCode
  readonly message: string
  readonly data: Readonly<Record<string, unknown>> | undefined
  readonly retryAfter: number | undefined
}

/** The in-process outcome, with the body as the SharedArrayBuffer that crosses the thread boundary (shared, not copied). */
export type PackumentTaskResult =
  | ({ readonly ok: true; readonly body: SharedArrayBuffer | undefined } & Omit<PackumentOutcome, 'body'>)
  | { readonly ok: false; readonly error: SerializedError }

/** A value and the objects to transfer with it, in piscina's Transferable shape. */
export class MovableMessage<T> {
  readonly #value: T
  readonly #transfer: readonly unknown[]

  constructor(value: T, transfer: readonly unknown[]) {
    this.#value = value
    this.#transfer = transfer
  }

  get [Piscina.transferableSymbol](): readonly unknown[] { return this.#transfer }
  get [Piscina.valueSymbol](): T { return this.#value }
}

/** Marks a MovableMessage for transfer (piscina's types cannot see its symbol getters). */
export function move<T>(message: MovableMessage<T>): MovableMessage<T> {
  return Piscina.move(message as unknown as Parameters<typeof Piscina.move>[0]) as unknown as MovableMessage<T>
}
