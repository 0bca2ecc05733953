/**
 * Both answers for every version of one package, precomputed once a
 * packument is being gated (compiled-database.ts builds it at the second
 * version of one package in a row). Every answer depends only on how the
 * version's key compares with each stored key of the package, so it is the
 * same for all versions in one cell: equal to one stored key (cell 2i+1), or
 * strictly between two neighbours (cell 2i, below key i). A lookup is then
 * one binary search over the package's distinct keys instead of a walk of
 * every range, and answers with shared frozen arrays.
 */
import { ServiceError } from '../../errors.js'
import * as F from './artifact-format.js'
import { AFFECTED, FIX_BOUND, NO_MATCHES, type ArtifactReader, type KeyComparison } from './artifact-reader.js'
import type { AdvisoryMatch } from './database.js'

export interface PackageTable {
  /** Offsets and lengths of the package's distinct stored keys, ascending. */
  readonly keyAt: Uint32Array
  readonly keyLength: Uint32Array
  readonly affecting: readonly (readonly AdvisoryMatch[])[]
  readonly remediating: readonly (readonly AdvisoryMatch[])[]
}

/** Cells x entries a table may hold; a larger package is evaluated entry by entry. */
const TABLE_WORK_LIMIT = 250_000

/** `list` frozen, or `previous` when it holds the same advisories (so neighbouring cells share one array). */
function sharedList(list: AdvisoryMatch[], previous: readonly AdvisoryMatch[] | undefined): readonly AdvisoryMatch[] {
  if (list.length === 0) return NO_MATCHES
  if (previous !== undefined && previous.length === list.length && list.every((m, i) => previous[i] === m)) return previous
  return Object.freeze(list)
}

/** Every stored key of a package's entries (range events and listed versions): where it lies, how long, whose. */
interface StoredKeys {
  readonly offsets: number[]
  readonly lengths: number[]
  /** The entry each key belongs to. */
  readonly owners: number[]
}

function storedKeysOf(reader: ArtifactReader, entries: number, count: number): StoredKeys {
  const view = reader.view
  const keys: StoredKeys = { offsets: [], lengths: [], owners: [] }
  for (let e = 0; e < count; e++) {
    let p = reader.u32(entries + e * F.ENTRY_SIZE + 4)
    const ranges = reader.u32(p)
    p += 4
    for (let r = 0; r < ranges; r++) {
      const events = reader.u32(p)
      p += 4
      for (let v = 0; v < events; v++) {
        const keyLen = view.getUint16(p + 2, true)
        if ((view.getUint8(p + 1) & F.FLAG_UNBOUNDED) === 0) {
          keys.offsets.push(p + 4)
          keys.lengths.push(keyLen)
          keys.owners.push(e)
        }
        p += 4 + keyLen
      }
    }
    const versions = reader.u32(p)
    p += 4
    for (let v = 0; v < versions; v++) {
      const k = reader.u32(p + v * 4)
      keys.offsets.push(k + 2)
      keys.lengths.push(view.getUint16(k, true))
      keys.owners.push(e)
    }
  }
  return keys
}

/**
 * A cell's place against each stored key, for evaluating a Match block at a
 * cell instead of at a version: from the cell's position against the key's
 * rank among the package's distinct keys.
 */
class CellComparison implements KeyComparison {
  cell = 0
  readonly #rankOf: ReadonlyMap<number, number>

  constructor(rankOf: ReadonlyMap<number, number>) {
    this.#rankOf = rankOf
  }

  compareAt(at: number): number {
    const rank = this.#rankOf.get(at)
    if (rank === undefined) throw new ServiceError('INTERNAL', { message: 'a stored key is missing from its package table' })
    const cell = this.cell
    if ((cell & 1) === 1) return ((cell - 1) >> 1) - rank
    return rank < cell >> 1 ? 1 : -1
  }
}

/**
 * The table of package `pkg` (see PackageTable): every stored key of its
 * entries, sorted and deduplicated, and both answers for each cell, worked
 * out by the reader's Match block evaluation with the comparisons taken from
 * the cell's position instead of from a key. The answers are frozen and a
 * cell that answers as its neighbour shares its arrays. Undefined when the
 * package is too large to be worth it (the lookups then evaluate entry by
 * entry).
 */
export function buildPackageTable(reader: ArtifactReader, pkg: number): PackageTable | undefined {
  const entries = reader.entriesOf(pkg)
  const count = reader.entryCountOf(pkg)
  const { offsets, lengths, owners } = storedKeysOf(reader, entries, count)
  if ((2 * offsets.length + 1) * count > TABLE_WORK_LIMIT) return undefined
  const u8 = reader.u8
  const compareStored = (a: number, b: number): number => {
    const atA = offsets[a] as number
    const atB = offsets[b] as number
    const lenA = lengths[a] as number
    const lenB = lengths[b] as number
    const n = lenA < lenB ? lenA : lenB
    for (let i = 0; i < n; i++) {
      const d = (u8[atA + i] as number) - (u8[atB + i] as number)
      if (d !== 0) return d
    }
    return lenA - lenB
  }
  const order = offsets.map((_, i) => i).sort(compareStored)
  const keyAt: number[] = []
  const keyLength: number[] = []
  const rankOf = new Map<number, number>()
  for (let i = 0; i < order.length; i++) {
    const o = order[i] as number
    if (i === 0 || compareStored(order[i - 1] as number, o) !== 0) {
      keyAt.push(offsets[o] as number)
      keyLength.push(lengths[o] as number)
    }
    rankOf.set(offsets[o] as number, keyAt.length - 1)
  }
  const cells = 2 * keyAt.length + 1
  // An entry's answer changes only at its own keys: it is the same in every
  // cell from one of its breakpoints (below everything; equal to one of its
  // keys; just above one) to the next, so each entry is evaluated at its
  // breakpoints alone and the answer carried forward.
  const breakpoints: number[][] = Array.from({ length: count }, () => [0])
  for (let i = 0; i < offsets.length; i++) {
    const rank = rankOf.get(offsets[i] as number) as number
    ;(breakpoints[owners[i] as number] as number[]).push(2 * rank + 1, 2 * rank + 2)
  }
  const results = new Uint8Array(cells * count)
  const at = new CellComparison(rankOf)
  for (let e = 0; e < count; e++) {
    const points = [...new Set(breakpoints[e])].sort((a, b) => a - b)
    const ref = reader.u32(entries + e * F.ENTRY_SIZE + 4)
    let next = 0
    let result = 0
    for (let cell = 0; cell < cells; cell++) {
      if (points[next] === cell) {
        at.cell = cell
        result = reader.evaluate(ref, true, at)
        next++
      }
      results[cell * count + e] = result
    }
  }
  const affecting: (readonly AdvisoryMatch[])[] = []
  const remediating: (readonly AdvisoryMatch[])[] = []
  for (let cell = 0; cell < cells; cell++) {
    const hit: AdvisoryMatch[] = []
    const fix: AdvisoryMatch[] = []
    for (let e = 0; e < count; e++) {
      const result = results[cell * count + e] as number
      if ((result & AFFECTED) !== 0) hit.push(reader.matchOf(reader.u32(entries + e * F.ENTRY_SIZE)))
      else if (result === FIX_BOUND) fix.push(reader.matchOf(reader.u32(entries + e * F.ENTRY_SIZE)))
    }
    affecting.push(sharedList(hit, affecting[cell - 1]))
    remediating.push(sharedList(fix, remediating[cell - 1]))
  }
  return { keyAt: Uint32Array.from(keyAt), keyLength: Uint32Array.from(keyLength), affecting, remediating }
}

/** The cell of the query among the table's keys: 2i+1 when it equals key i, 2i when it falls below key i and above key i-1. */
export function cellOf(table: PackageTable, query: KeyComparison): number {
  const keyAt = table.keyAt
  const keyLength = table.keyLength
  let lo = 0
  let hi = keyAt.length - 1
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1
    const c = query.compareAt(keyAt[mid] as number, keyLength[mid] as number)
    if (c === 0) return 2 * mid + 1
    if (c > 0) lo = mid + 1
    else hi = mid - 1
  }
  return 2 * lo
}
