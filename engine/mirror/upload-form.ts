/**
 * The body of a legacy upload (`POST` multipart/form-data, RFC 7578), as
 * `twine upload` sends it to a Python index (warehouse's legacy API,
 * pypiserver, devpi, Nexus, Artifactory, CodeArtifact), written as a
 * stream: the form fields, then the `content` part's header, then the
 * distribution's bytes as they arrive from the public upstream, then the
 * closing delimiter. The file is never held whole.
 *
 * MUST: the closing delimiter (`--boundary--`) is written only after the
 * caller has verified the bytes (`uploadBody` takes the verdict as a
 * function called after the last chunk). A form cut before its closing
 * delimiter is not a complete multipart body (RFC 2046 5.1.1), so a target
 * cannot store an upload whose bytes failed verification or that was
 * interrupted. This is the `py` twin of publish-body.ts, whose JSON tail
 * plays the same part.
 */
import { randomBytes } from 'node:crypto'

/** A form field: repeated names are repeated parts, as twine flattens lists (Classifier, Requires-Dist). */
export type FormField = readonly [name: string, value: string]

export interface UploadFormParts {
  readonly boundary: string
  /** `multipart/form-data; boundary=...` */
  readonly contentType: string
  /** Every field part, then the `content` part's header: all that precedes the file's bytes. */
  readonly head: Buffer
  /** The closing delimiter: written only after the digest matched. */
  readonly tail: Buffer
  /** The whole body's length for a file of `fileBytes` bytes (a Content-Length when the upstream declared one). */
  length(fileBytes: number): number
}

/**
 * A quoted-string parameter of Content-Disposition as browsers and
 * requests-toolbelt write it for form data (HTML's multipart/form-data
 * encoding): `"` and line breaks percent-encoded, nothing else touched.
 */
function quoted(value: string): string {
  return `"${value.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A')}"`
}

/** A fresh boundary: 32 random hex digits, which no distribution's bytes will contain by chance. */
export function newBoundary(): string {
  return `----registry-proxy-${randomBytes(16).toString('hex')}`
}

export function uploadFormParts(fields: readonly FormField[], filename: string, boundary: string = newBoundary()): UploadFormParts {
  if (!/^[0-9A-Za-z'()+_,./:=?-]{1,70}$/.test(boundary)) throw new TypeError('not a usable multipart boundary (RFC 2046 5.1.1)')
  const parts: string[] = []
  for (const [name, value] of fields) {
    parts.push(`--${boundary}\r\nContent-Disposition: form-data; name=${quoted(name)}\r\n\r\n${value}\r\n`)
  }
  parts.push(`--${boundary}\r\nContent-Disposition: form-data; name="content"; filename=${quoted(filename)}\r\nContent-Type: application/octet-stream\r\n\r\n`)
  const head = Buffer.from(parts.join(''), 'utf8')
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`, 'latin1')
  return {
    boundary,
    contentType: `multipart/form-data; boundary=${boundary}`,
    head,
    tail,
    length: (fileBytes) => head.byteLength + fileBytes + tail.byteLength,
  }
}

/**
 * The body as an async iterable: the head, each chunk of `file` as it is
 * pulled (after `onChunk` has seen it, which hashes and counts it and may
 * throw to stop), then, once `file` has ended, `verify()`; only when it
 * resolves is the tail written. Whatever throws ends the iterable with that
 * error and no tail, and `file` is returned (its source destroyed by the
 * caller's `finally`).
 */
export async function* uploadBody(
  parts: Pick<UploadFormParts, 'head' | 'tail'>,
  file: AsyncIterable<Uint8Array>,
  onChunk: (chunk: Uint8Array) => void,
  verify: () => void | Promise<void>,
): AsyncGenerator<Uint8Array> {
  yield parts.head
  for await (const chunk of file) {
    onChunk(chunk)
    yield chunk
  }
  // MUST: the closing delimiter only after the digest matched; without it the form is incomplete.
  await verify()
  yield parts.tail
}
