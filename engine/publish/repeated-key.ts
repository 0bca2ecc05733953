/**
 * Finds a key repeated within one object of a JSON text that JSON.parse has
 * already accepted. RFC 8259 section 4 leaves repeated names to the reader:
 * JSON.parse keeps the last, other parsers keep the first. A publish
 * document is checked as JSON.parse reads it and relayed byte for byte
 * (publish-document.ts), so a repeated `name`, `versions`, `dist` or
 * attachment would let a first-wins publication target store another name,
 * manifest or tarball than the one checked. npm, pnpm and yarn write their
 * documents with JSON.stringify, which never repeats a key.
 *
 * Keys are compared decoded, as JSON.parse reads them (`"n\u0061me"` is
 * `name`). The text is known to be well-formed, so the scan only tracks
 * nesting and which strings are keys; strings are skipped with a native
 * search for the closing quote, so a base64 tarball costs almost nothing.
 * Memory: the keys of the objects still open, a small part of the document.
 */

const QUOTE = 0x22
const BACKSLASH = 0x5c

/** The closing quote of the string whose opening quote is at `start`. */
function stringEnd(text: Buffer, start: number): number {
  let end = text.indexOf(QUOTE, start + 1)
  for (;;) {
    let backslashes = 0
    while (text[end - 1 - backslashes] === BACKSLASH) backslashes++
    if (backslashes % 2 === 0) return end
    end = text.indexOf(QUOTE, end + 1)
  }
}

function keyAt(text: Buffer, start: number, end: number): string {
  const raw = text.subarray(start + 1, end)
  // Only an escaped key needs JSON's decoding; UTF-8 is decoded as JSON.parse's caller decoded it.
  return raw.includes(BACKSLASH) ? JSON.parse(text.toString('utf8', start, end + 1)) as string : raw.toString('utf8')
}

/**
 * The first repeated key as a dotted path (`versions.1.0.0.dist`), or
 * undefined when every object's keys are distinct. `text` MUST be JSON
 * that JSON.parse accepts.
 */
export function repeatedKey(text: Buffer): string | undefined {
  /** Per open container: the keys seen (an object) or null (an array). */
  const open: (Set<string> | null)[] = []
  /** Per open container: its key in its parent (`[]` inside an array). */
  const path: string[] = []
  let lastKey = ''
  let expectKey = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === QUOTE) {
      const end = stringEnd(text, i)
      if (expectKey) {
        const key = keyAt(text, i, end)
        const seen = open[open.length - 1] as Set<string>
        if (seen.has(key)) return [...path.slice(1), key].join('.')
        seen.add(key)
        lastKey = key
        expectKey = false
      }
      i = end
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      path.push(open.length > 0 && open[open.length - 1] === null ? '[]' : lastKey)
      open.push(c === 0x7b ? new Set() : null)
      expectKey = c === 0x7b
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      open.pop()
      path.pop()
    } else if (c === 0x2c /* , */) {
      expectKey = open[open.length - 1] instanceof Set
    }
  }
  return undefined
}
