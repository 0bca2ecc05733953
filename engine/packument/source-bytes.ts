/**
 * The retained bytes of one upstream document, kept as the chunks that
 * arrived and never concatenated (DESIGN.md: 1.1 bytes of memory per source
 * byte for `js` is the source plus a small index). Every offset in a
 * PackumentIndex is a position in this byte stream; render copies from here.
 */
import { Buffer } from 'node:buffer'

/** Node's Buffer decoders behind toString (present since Node 0.x; used only when there). */
interface FastSlices {
  readonly latin1Slice?: (this: Buffer, start: number, end: number) => string
  readonly utf8Slice?: (this: Buffer, start: number, end: number) => string
}

// Buffer's own slice methods skip toString's argument handling, which costs
// more than the decode on the short strings read here.
const LATIN1_SLICE = (Buffer.prototype as unknown as FastSlices).latin1Slice ?? function latin1(this: Buffer, start: number, end: number) { return this.toString('latin1', start, end) }
const UTF8_SLICE = (Buffer.prototype as unknown as FastSlices).utf8Slice ?? function utf8(this: Buffer, start: number, end: number) { return this.toString('utf8', start, end) }

export class SourceBytes {
  readonly #chunks: Buffer[] = []
  readonly #starts: number[] = []
  #length = 0
  /** Index of the chunk found last; reads walk forward, so this is usually the answer. */
  #last = 0

  /** Keeps `chunk` by reference: the caller must not write to it afterwards. */
  append(chunk: Uint8Array): void {
    this.#chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength))
    this.#starts.push(this.#length)
    this.#length += chunk.byteLength
  }

  get byteLength(): number { return this.#length }
  get chunkCount(): number { return this.#chunks.length }

  #locate(pos: number): number {
    const starts = this.#starts
    const chunks = this.#chunks
    let k = this.#last
    const s = starts[k]
    if (s !== undefined && pos >= s && pos < s + chunks[k]!.length) return k
    const next = starts[k + 1]
    if (next !== undefined && pos >= next && pos < next + chunks[k + 1]!.length) {
      this.#last = k + 1
      return k + 1
    }
    let lo = 0
    let hi = chunks.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1
      if (starts[mid]! <= pos) lo = mid
      else hi = mid - 1
    }
    this.#last = lo
    return lo
  }

  /** The chunk holding all of [start, end), or undefined when they span chunks; `chunkOffset` is then where `start` lies in it. */
  within(start: number, end: number): Buffer | undefined {
    const k = this.#locate(start)
    const base = this.#starts[k]!
    const chunk = this.#chunks[k]!
    if (end - base > chunk.length) return undefined
    this.chunkOffset = start - base
    return chunk
  }

  /** Set by `within`. */
  chunkOffset = 0

  byteAt(pos: number): number {
    const k = this.#locate(pos)
    return this.#chunks[k]![pos - this.#starts[k]!]!
  }

  /** Copies [start, end) into `out` at `at`; returns the position after it. */
  copyTo(out: Uint8Array, at: number, start: number, end: number): number {
    if (end <= start) return at
    let k = this.#locate(start)
    let pos = start
    const chunks = this.#chunks
    const starts = this.#starts
    while (pos < end) {
      const chunk = chunks[k]!
      const base = starts[k]!
      const from = pos - base
      const to = Math.min(chunk.length, end - base)
      if (to - from <= 24) {
        // Most pieces of a render are a few bytes: a loop beats allocating a view.
        for (let p = from; p < to; p++) out[at++] = chunk[p]!
      } else {
        chunk.copy(out, at, from, to)
        at += to - from
      }
      pos = base + to
      k++
    }
    this.#last = k - 1
    return at
  }

  /** The bytes [start, end): a view when they lie in one chunk, else a copy. */
  bytes(start: number, end: number): Uint8Array {
    const k = this.#locate(start)
    const base = this.#starts[k]!
    const chunk = this.#chunks[k]!
    if (end - base <= chunk.length) return chunk.subarray(start - base, end - base)
    const out = Buffer.allocUnsafe(end - start)
    this.copyTo(out, 0, start, end)
    return out
  }

  #decode(start: number, end: number, encoding: 'latin1' | 'utf8'): string {
    const k = this.#locate(start)
    const base = this.#starts[k]!
    const chunk = this.#chunks[k]!
    if (end - base <= chunk.length) return (encoding === 'latin1' ? LATIN1_SLICE : UTF8_SLICE).call(chunk, start - base, end - base)
    const out = Buffer.allocUnsafe(end - start)
    this.copyTo(out, 0, start, end)
    return out.toString(encoding)
  }

  /** Bytes known to be ASCII as a string. */
  ascii(start: number, end: number): string { return this.#decode(start, end, 'latin1') }

  utf8(start: number, end: number): string { return this.#decode(start, end, 'utf8') }

  /**
   * The value of the JSON string token [start, end) (quotes included).
   * `plain` says the scanner saw neither an escape nor a non-ASCII byte in it.
   */
  jsonString(start: number, end: number, plain: boolean): string {
    if (plain) return this.ascii(start + 1, end - 1)
    return JSON.parse(this.utf8(start, end)) as string
  }
}
