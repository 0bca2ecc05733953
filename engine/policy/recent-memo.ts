/**
 * A handful of recent key-to-value pairs, compared by a given equality and
 * replaced round robin. The rules and the evaluator use it to hand back the
 * same frozen outcome (and Decision) while consecutive versions of one
 * packument share their advisories: a deny then costs a few comparisons, not
 * a rebuilt evidence list. Its size is fixed, so it never grows with the
 * packages it has seen.
 */
export class RecentMemo<K, V> {
  readonly #keys: K[] = []
  readonly #values: V[] = []
  readonly #capacity: number
  readonly #equal: (a: K, b: K) => boolean
  #next = 0
  #last = 0

  constructor(capacity: number, equal: (a: K, b: K) => boolean) {
    this.#capacity = capacity
    this.#equal = equal
  }

  get(key: K): V | undefined {
    const keys = this.#keys
    // The pair found last first: consecutive versions mostly repeat it.
    const last = this.#last
    if (last < keys.length && this.#equal(key, keys[last] as K)) return this.#values[last]
    for (let i = 0; i < keys.length; i++) {
      if (i !== last && this.#equal(key, keys[i] as K)) {
        this.#last = i
        return this.#values[i]
      }
    }
    return undefined
  }

  set(key: K, value: V): void {
    if (this.#keys.length < this.#capacity) {
      this.#keys.push(key)
      this.#values.push(value)
      return
    }
    this.#keys[this.#next] = key
    this.#values[this.#next] = value
    this.#next = (this.#next + 1) % this.#capacity
  }
}
