/**
 * Checks that a byte stream fed in chunks is well-formed UTF-8 (RFC 8259
 * section 8.1: JSON text exchanged between systems MUST be UTF-8). Structure
 * outside strings is ASCII and the scanner refuses anything else there, so
 * validating the whole stream validates every string. The work is native
 * (`buffer.isUtf8`); only a sequence cut by a chunk boundary is carried.
 */
import { isUtf8 } from 'node:buffer'

/** Length of the sequence a lead byte announces; 1 for anything else, so isUtf8 judges it. */
function sequenceLength(lead: number): number {
  if (lead >= 0xf0) return 4
  if (lead >= 0xe0) return 3
  if (lead >= 0xc0) return 2
  return 1
}

export class Utf8Validator {
  readonly #carry = new Uint8Array(4)
  #carried = 0
  #needed = 0

  /** Returns false when the stream is not UTF-8. */
  push(chunk: Uint8Array): boolean {
    let start = 0
    if (this.#carried > 0) {
      const take = Math.min(this.#needed - this.#carried, chunk.length)
      this.#carry.set(chunk.subarray(0, take), this.#carried)
      this.#carried += take
      start = take
      if (this.#carried < this.#needed) return true
      const ok = isUtf8(this.#carry.subarray(0, this.#carried))
      this.#carried = 0
      if (!ok) return false
    }
    let end = chunk.length
    // Look back over at most three continuation bytes for a cut sequence.
    let j = end - 1
    let back = 0
    while (j >= start && back < 3 && (chunk[j]! & 0xc0) === 0x80) { j--; back++ }
    if (j >= start && chunk[j]! >= 0xc0) {
      const length = sequenceLength(chunk[j]!)
      if (j + length > end) {
        this.#carry.set(chunk.subarray(j, end), 0)
        this.#carried = end - j
        this.#needed = length
        end = j
      }
    }
    return end <= start || isUtf8(chunk.subarray(start, end))
  }

  /** Returns false when the stream ended inside a sequence. */
  end(): boolean { return this.#carried === 0 }
}
