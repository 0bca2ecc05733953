/**
 * A binary min-heap ordered by (visibleAt, seq): the next message to become
 * visible is always on top, so a receive costs O(log n) per message however
 * many thousands wait. Entries are never updated in place; the queue pushes a
 * new entry on every change and skips stale ones when they surface.
 */
export interface HeapEntry {
  readonly visibleAt: number
  /** Send order: among messages visible at the same instant, the older first. */
  readonly seq: number
}

export class VisibilityHeap<T extends HeapEntry> {
  readonly #items: T[] = []

  get size(): number { return this.#items.length }

  peek(): T | undefined { return this.#items[0] }

  push(item: T): void {
    const items = this.#items
    items.push(item)
    let i = items.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!before(items[i]!, items[parent]!)) break
      swap(items, i, parent)
      i = parent
    }
  }

  pop(): T | undefined {
    const items = this.#items
    const top = items[0]
    const last = items.pop()
    if (top === undefined || last === undefined || items.length === 0) return top
    items[0] = last
    let i = 0
    for (;;) {
      const left = 2 * i + 1
      const right = left + 1
      let least = i
      if (left < items.length && before(items[left]!, items[least]!)) least = left
      if (right < items.length && before(items[right]!, items[least]!)) least = right
      if (least === i) return top
      swap(items, i, least)
      i = least
    }
  }

  /** Drops every entry; used when the queue rebuilds the heap from live state. */
  clear(): void { this.#items.length = 0 }
}

function before(a: HeapEntry, b: HeapEntry): boolean {
  return a.visibleAt < b.visibleAt || (a.visibleAt === b.visibleAt && a.seq < b.seq)
}

function swap<T>(items: T[], i: number, j: number): void {
  const tmp = items[i]!
  items[i] = items[j]!
  items[j] = tmp
}
