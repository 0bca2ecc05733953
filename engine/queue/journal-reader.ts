/**
 * Streaming replay of the embedded queue's journal: the file is read in
 * fixed-size chunks and handed over one line at a time, so replay holds at
 * most one line and one chunk, never the file. A journal written by an older
 * build can be hundreds of MiB (issue 12: 294 MiB of 200 KB bodies, whose
 * replay as one string overflowed the V8 heap on every restart).
 *
 * A line longer than `maxLineBytes` is not accumulated: its bytes are
 * skipped as they stream past, and only its first HEAD_BYTES are kept, so the
 * caller can say what it dropped. Lines are split on the byte 0x0A, which
 * never occurs inside a UTF-8 sequence, so each line decodes on its own.
 */
import type { FileHandle } from 'node:fs/promises'

const CHUNK_BYTES = 256 * 1024
/** Bytes kept from the start of an over-long line: enough for its `op` and `id`. */
export const HEAD_BYTES = 256

export interface JournalLineSink {
  /** A complete line within the bound, without its newline. */
  line(text: string): void
  /** A complete line over the bound: its first HEAD_BYTES bytes and its length. */
  overLong(head: string, bytes: number): void
}

export interface JournalScan {
  /** Bytes up to the end of the last complete line; a torn tail starts here. */
  readonly completeBytes: number
  /** Bytes in the file. */
  readonly totalBytes: number
}

/** Reads `handle` from its start to its end, line by line, into `sink`. */
export async function scanJournal(handle: FileHandle, maxLineBytes: number, sink: JournalLineSink): Promise<JournalScan> {
  const chunk = Buffer.allocUnsafe(CHUNK_BYTES)
  let carry: Buffer[] = []
  let carryBytes = 0
  // While an over-long line streams past: its head, and its length so far.
  let skipping: { head: Buffer, bytes: number } | undefined
  let position = 0
  let completeBytes = 0
  for (;;) {
    const { bytesRead } = await handle.read(chunk, 0, CHUNK_BYTES, position)
    if (bytesRead === 0) break
    const data = chunk.subarray(0, bytesRead)
    let start = 0
    for (;;) {
      const newline = data.indexOf(0x0a, start)
      const piece = data.subarray(start, newline === -1 ? data.length : newline)
      if (skipping !== undefined) {
        skipping.bytes += piece.length
      } else if (carryBytes + piece.length > maxLineBytes) {
        const head = Buffer.concat([...carry, piece.subarray(0, HEAD_BYTES)]).subarray(0, HEAD_BYTES)
        skipping = { head: Buffer.from(head), bytes: carryBytes + piece.length }
        carry = []
        carryBytes = 0
      } else if (newline === -1) {
        carry.push(Buffer.from(piece)) // a copy: `chunk` is reused by the next read
        carryBytes += piece.length
      }
      if (newline === -1) break
      if (skipping !== undefined) {
        sink.overLong(skipping.head.toString('utf8'), skipping.bytes)
        skipping = undefined
      } else {
        const text = carry.length === 0 ? piece.toString('utf8') : Buffer.concat([...carry, piece]).toString('utf8')
        carry = []
        carryBytes = 0
        if (text !== '') sink.line(text)
      }
      completeBytes = position + newline + 1
      start = newline + 1
    }
    position += bytesRead
  }
  return { completeBytes, totalBytes: position }
}
