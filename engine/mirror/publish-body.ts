/**
 * The npm publish document of one mirrored version (SPEC.md 2.5), written as
 * a stream: `{..., "versions": {V: manifest}, "_attachments": {F: {"data":
 * "<base64>", ...}}}`. The artifact is base64 inside JSON, so a naive body
 * is the whole tarball and a third more in one string; here the bytes are
 * encoded chunk by chunk as they arrive from the public upstream and never
 * held whole (issue 12: "stream it, do not build it as one string").
 *
 * The tail of the document (the closing quote and braces) is written only
 * once the caller has verified the bytes: a body cut before its tail is not
 * JSON, so a target can never accept a publication whose bytes failed
 * verification, or that was interrupted (a crash mid-publish). This is the
 * `js` twin of upload-form.ts, whose closing delimiter plays the same part.
 */

/** Encodes a byte stream as base64 without holding it: carries the 0-2 bytes that do not fill a group of three. */
export class Base64Chunker {
  #carry: Buffer = Buffer.alloc(0)

  push(chunk: Uint8Array): string {
    const joined = this.#carry.byteLength === 0 ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength) : Buffer.concat([this.#carry, chunk])
    const whole = joined.byteLength - (joined.byteLength % 3)
    // Copied: the source may reuse the chunk's memory once we return.
    this.#carry = Buffer.from(joined.subarray(whole))
    return joined.toString('base64', 0, whole)
  }

  end(): string {
    const rest = this.#carry.toString('base64')
    this.#carry = Buffer.alloc(0)
    return rest
  }
}

export interface PublishDocumentParts {
  /** Everything up to the opening quote of the attachment's data. */
  readonly head: string
  /** Everything after the data, given its length in bytes. */
  tail(length: number): string
}

/**
 * The parts around the base64 data. `dist-tags` is empty on purpose: the
 * mirror back-fills versions and must not move the target's tags (SPEC.md
 * 1.5: the target owns tags; a mirrored old version must not become
 * `latest`). The attachment is named as npm names it, `<name>-<version>.tgz`
 * with the scope, unless the artifact's own file name differs, in which case
 * it keeps that name so the private leg finds it where clients ask.
 */
export function publishDocumentParts(input: { readonly name: string; readonly version: string; readonly manifest: Readonly<Record<string, unknown>>; readonly attachment: string }): PublishDocumentParts {
  const name = JSON.stringify(input.name)
  const head = `{"_id":${name},"name":${name},"dist-tags":{},"versions":{${JSON.stringify(input.version)}:${JSON.stringify(input.manifest)}},`
    + `"_attachments":{${JSON.stringify(input.attachment)}:{"content_type":"application/octet-stream","data":"`
  return { head, tail: (length) => `","length":${length}}}}` }
}

/** `@scope/` + file for a scoped package, so the key is npm's `<name>-<version>.tgz` for a conventional file name. */
export function attachmentName(packageName: string, filename: string): string {
  const slash = packageName.indexOf('/')
  return packageName.startsWith('@') && slash > 0 ? `${packageName.slice(0, slash + 1)}${filename}` : filename
}

/**
 * The document as an async iterable: the head, each chunk of `file`
 * base64-encoded as it is pulled (after `onChunk` has seen it, which hashes
 * and counts it and may throw to stop), then, once `file` has ended,
 * `verify()`, which returns the artifact's length; only when it returns is
 * the tail written. Whatever throws ends the iterable with that error and
 * no tail.
 */
export async function* publishBody(
  parts: PublishDocumentParts,
  file: AsyncIterable<Uint8Array>,
  onChunk: (chunk: Uint8Array) => void,
  verify: () => number,
): AsyncGenerator<string> {
  yield parts.head
  const base64 = new Base64Chunker()
  for await (const chunk of file) {
    onChunk(chunk)
    const encoded = base64.push(chunk)
    if (encoded.length > 0) yield encoded
  }
  const rest = base64.end()
  // MUST: the tail only after the digest matched; without it the document is not JSON and cannot be accepted.
  const length = verify()
  yield rest + parts.tail(length)
}
