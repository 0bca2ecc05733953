/**
 * One real packument served under any name, for floods of cold requests that
 * cannot join each other's fetch: every `"name":"<original>"` member, the
 * document's and each version manifest's, is written as the asked name, so
 * the versions stay the package's own (a manifest naming another package is
 * dropped by the merge). The document is split once; each answer writes the
 * shared parts by reference, never a copy of the whole.
 */
import type { ServerResponse } from 'node:http'

export class RenamablePackument {
  readonly #parts: Buffer[]
  readonly bytes: number

  constructor(doc: Readonly<Record<string, unknown>>, original: string) {
    const text = JSON.stringify(doc)
    this.bytes = Buffer.byteLength(text)
    this.#parts = text.split(`"name":${JSON.stringify(original)}`).map((part) => Buffer.from(part))
    if (this.#parts.length < 2) throw new Error(`the document never names ${original}`)
  }

  /** Writes the whole document, named `name`, and ends the response. */
  send(res: ServerResponse, name: string): void {
    const token = Buffer.from(`"name":${JSON.stringify(name)}`)
    res.writeHead(200, { 'content-type': 'application/json' })
    this.#parts.forEach((part, i) => {
      if (i > 0) res.write(token)
      res.write(part)
    })
    res.end()
  }
}
