/**
 * The replicas' waiters on a package's lease (shared-backend.ts `watch`):
 * who is told when the lease is released, with the releaser's outcome. One
 * registry for both backends; they differ only in how a release reaches it
 * (in process, or a redis message) and in when every waiter is let go
 * (the redis subscriber's loss).
 */
import type { LeaseWatch } from './shared-backend.js'

export class LeaseWatchers {
  readonly #watchers = new Map<string, Set<(outcome: string) => void>>()

  /** A waiter on `key`'s release; `cancel` removes it. */
  watch(key: string): LeaseWatch {
    let notify: ((outcome: string) => void) | undefined
    const settled = new Promise<string>((resolve) => { notify = resolve })
    const listener = (outcome: string): void => notify?.(outcome)
    let set = this.#watchers.get(key)
    if (set === undefined) this.#watchers.set(key, set = new Set())
    set.add(listener)
    return {
      settled,
      cancel: () => {
        const current = this.#watchers.get(key)
        current?.delete(listener)
        if (current?.size === 0) this.#watchers.delete(key)
      },
    }
  }

  /** A waiter that is told `outcome` at once (nothing can reach it: the release channel is down). */
  static settledWith(outcome: string): LeaseWatch {
    return { settled: Promise.resolve(outcome), cancel: () => {} }
  }

  /** Tells `key`'s waiters the outcome and forgets them. */
  released(key: string, outcome: string): void {
    const watchers = this.#watchers.get(key)
    if (watchers === undefined) return
    this.#watchers.delete(key)
    for (const notify of watchers) notify(outcome)
  }

  /** Tells every waiter the outcome and forgets them. */
  settleAll(outcome: string): void {
    const watchers = [...this.#watchers.values()]
    this.#watchers.clear()
    for (const set of watchers) for (const listener of set) listener(outcome)
  }

  /** Forgets every waiter without telling it (the backend is closing). */
  clear(): void {
    this.#watchers.clear()
  }
}
