/**
 * Content coding of an assembled answer, in a pool thread (issue 17 item 1):
 * a 10 MB packument codes in about 40 ms, too long for the event loop. The
 * identity body arrives shared (a rendered body, read in place) or as a
 * transferred copy (the retained original stays with the main thread), and
 * the coded bytes move back without a copy.
 */
import { compressBody, type ContentCoding } from '../engine/packument/content-coding.js'
import { reportHeap } from './heap-report.js'
import { move, MovableMessage } from './packument-messages.js'

export interface CompressTaskInput {
  readonly body: ArrayBuffer | SharedArrayBuffer
  /** Where the identity body lies in a shared `body`; absent: all of it. */
  readonly offset?: number
  readonly length?: number
  readonly coding: Exclude<ContentCoding, 'identity'>
}

export async function compressTask(task: CompressTaskInput): Promise<MovableMessage<ArrayBuffer>> {
  try {
    const coded = compressBody(new Uint8Array(task.body, task.offset ?? 0, task.length), task.coding)
    // zlib's result may be a view into a larger pooled buffer: copy it into its own so it can move.
    const own = coded.byteOffset === 0 && coded.byteLength === coded.buffer.byteLength ? coded.buffer as ArrayBuffer : Uint8Array.prototype.slice.call(coded).buffer as ArrayBuffer
    return move(new MovableMessage(own, [own]))
  } finally {
    reportHeap()
  }
}
