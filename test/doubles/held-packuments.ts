/**
 * A stand-in for the packuments a process holds (engine/mirror/retained-packuments.ts):
 * what a shared backend (issue 29 item 1) will hand the `js` mirror worker,
 * here a map the test fills, counting each read. `failing` makes every read
 * reject, as a backend that is down would if it broke the interface's rule.
 */
import type { RetainedPackument, RetainedPackuments, RetainedSource } from '../../engine/mirror/retained-packuments.js'

export class HeldPackuments implements RetainedPackuments {
  readonly #held = new Map<string, RetainedPackument>()
  readonly source: RetainedSource
  reads = 0
  failing = false

  constructor(source: RetainedSource = 'shared') {
    this.source = source
  }

  /** Holds `document` (serialized as a packument's bytes) for its `name`. */
  hold(document: { readonly name: string } & Record<string, unknown>): void {
    this.#held.set(document.name, { chunks: [new TextEncoder().encode(JSON.stringify(document))], source: this.source })
  }

  async read(packageName: string): Promise<RetainedPackument | undefined> {
    this.reads++
    if (this.failing) throw new Error('the backend is down')
    return this.#held.get(packageName)
  }
}
