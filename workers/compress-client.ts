/**
 * Main-thread side of the compress task: hands the retained identity body to
 * the packument pool, runs the named task there and returns the coded bytes.
 * A rendered body is shared memory (engine/packument/render.ts) and is read
 * in place; any other body is copied into a transferable buffer, as the
 * retained original stays with the main thread.
 */
import type { Piscina } from 'piscina'
import { toServiceError } from '../engine/errors.js'
import type { ContentCoding } from '../engine/packument/content-coding.js'
import type { CompressTaskInput } from './compress-task.js'
import { move, MovableMessage } from './packument-messages.js'

export async function runCompressTask(pool: Piscina, body: Uint8Array, coding: Exclude<ContentCoding, 'identity'>, signal?: AbortSignal): Promise<Uint8Array> {
  const shared = body.buffer instanceof SharedArrayBuffer
  // Else a copy: the identity body stays retained for identity requests. Under
  // the launcher's mmap threshold a 9.6 MB copy took 42-48 ms of CPU, on the event loop.
  const bytes = shared ? body.buffer : Uint8Array.prototype.slice.call(body).buffer as ArrayBuffer
  const input: CompressTaskInput = shared ? { body: bytes, offset: body.byteOffset, length: body.byteLength, coding } : { body: bytes, coding }
  try {
    const coded = await pool.run(move(new MovableMessage(input, shared ? [] : [bytes])), { name: 'compressTask', ...(signal === undefined ? {} : { signal }) }) as ArrayBuffer
    return new Uint8Array(coded)
  } catch (error) {
    throw toServiceError(error)
  }
}
