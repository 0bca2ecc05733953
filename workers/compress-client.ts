/**
 * Main-thread side of the compress task: copies the retained identity body
 * into a transferable buffer, runs the named task on the packument pool and
 * returns the coded bytes.
 */
import type { Piscina } from 'piscina'
import { toServiceError } from '../engine/errors.js'
import type { ContentCoding } from '../engine/packument/content-coding.js'
import type { CompressTaskInput } from './compress-task.js'
import { move, MovableMessage } from './packument-messages.js'

export async function runCompressTask(pool: Piscina, body: Uint8Array, coding: Exclude<ContentCoding, 'identity'>, signal?: AbortSignal): Promise<Uint8Array> {
  // A copy: the identity body stays retained for identity requests.
  const copy = Uint8Array.prototype.slice.call(body).buffer as ArrayBuffer
  const input: CompressTaskInput = { body: copy, coding }
  try {
    const coded = await pool.run(move(new MovableMessage(input, [copy])), { name: 'compressTask', ...(signal === undefined ? {} : { signal }) }) as ArrayBuffer
    return new Uint8Array(coded)
  } catch (error) {
    throw toServiceError(error)
  }
}
