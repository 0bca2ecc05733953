/**
 * The metadata cache of the local backend (SPEC.md 6.3):
 *
 * - `full`: full upstream documents are never retained locally: its entries
 *   and bytes stay zero, and every upstream document read counts as a miss.
 *   Identical requests collapse one level up, on the assembled store, where
 *   a joiner is counted `collapsed`.
 * - `version`: the selected-version store, package + artifact filename to
 *   the selected version record (the public artifact decision path).
 * - `assembled`: the assembled-response store, package + response form +
 *   generation to the rendered bytes and their ETag.
 *
 * `version` and `assembled` share one byte bound and one entry bound
 * (`cache.maxBytes`) with no reserved shares (retention-store.ts).
 */
import type { Clock } from '../clock.js'
import { CacheBudget } from './cache-budget.js'
import { StoreCounters, type StoreSnapshot } from './cache-counters.js'
import { RequestCollapser } from './collapse.js'
import { ServiceError } from '../errors.js'
import { FullDocumentStore } from './full-document-store.js'
import { RetentionStore, type RetainResult } from './retention-store.js'
import { packageGroup } from './shared-backend.js'
import type { AcrossTier, SharedTier } from './shared-tier.js'
import { decodeValue, encodeValue } from './value-codec.js'

/** Our choice (SPEC.md gives none): how long a selected version or an assembled response is reused. */
export const DEFAULT_SELECTED_VERSION_TTL_MS = 5 * 60 * 1000
export const DEFAULT_ASSEMBLED_TTL_MS = 5 * 60 * 1000

/**
 * How long a revalidated answer (one carrying `freshness`) may be kept at
 * all: it is served without asking the upstreams only while fresh, but its
 * validators save a full read and render for this long, and it is rendered
 * again from full documents at least this often.
 */
export const REVALIDATED_RETENTION_MS = 60 * 60 * 1000

/** What one upstream said of its document when an answer was rendered: enough to ask it whether that changed. */
export type SourceValidators =
  | { readonly kind: 'document'; readonly etag?: string; readonly lastModified?: string }
  | { readonly kind: 'miss' }
  | { readonly kind: 'absent' }

/** When a retained answer is served as is, revalidated, or rendered again (issue 17 item 2). */
export interface Freshness {
  /** When the documents it was rendered from were read. */
  readonly renderedAt: number
  /** Until then it is served without asking the upstreams. */
  readonly freshUntil: number
  /** From then on it is rendered again from full documents (a quarantine ends, the advisory push expires). */
  readonly regateAt: number | undefined
  /** Each upstream's validators; undefined when one cannot be revalidated (it failed, or sent no validator). */
  readonly sources: { readonly private: SourceValidators; readonly public: SourceValidators } | undefined
}

/** A rendered listing ready to serve again, with the ETag it answers conditional requests with. */
export interface AssembledResponse {
  readonly body: Uint8Array
  readonly etag: string
  /** The body's content coding; absent is identity. A coded form is retained beside the identity one (its own key). */
  readonly coding?: 'br' | 'gzip'
  /** Set on a revalidating mount's identity answers; without it the store's time to live alone decides. */
  readonly freshness?: Freshness
  /** The `npm-notice` line of an answer from which versions were withheld (engine/packument/withheld-notice.ts). */
  readonly notice?: string
}

// NUL never appears in a package name, file name, form or generation, so joined keys cannot collide.
const SEPARATOR = '\u0000'

export function selectedVersionKey(ecosystem: string, packageName: string, filename: string): string {
  return [ecosystem, packageName, filename].join(SEPARATOR)
}

/**
 * `variant` names what else the answer's bytes depend on: the base URL its
 * artifact URLs start with when they follow the request's origin, and the
 * npm audit view (engine/packument/render-variant.ts); '' for the default.
 */
export function assembledKey(ecosystem: string, packageName: string, form: string, generation: number | string, variant = ''): string {
  return [ecosystem, packageName, form, String(generation), variant].join(SEPARATOR)
}

/** Accounted bytes of an answer: its body and tag, and a flat 256 for its freshness record. */
export function assembledSize(value: AssembledResponse): number {
  return value.body.byteLength + value.etag.length + (value.freshness === undefined ? 0 : 256) + (value.notice?.length ?? 0)
}

/** What a request lets a shared read charge: the bytes it brought into memory (SPEC.md 8.1 "its reads"). */
export interface ReadOptions {
  readonly charge?: ((bytes: number) => Promise<void> | undefined) | undefined
}

/**
 * The work a leader does, and under which stamp it may retain: `''` on the
 * local backend; with a shared one, the package group's stamp read before
 * the work began (shared-backend.ts says why), or undefined when the backend
 * failed (nothing is retained then, locally or shared: SPEC.md 6.3).
 */
export interface Work {
  readonly stamp: string | undefined
}

export type TierLoad<V> = (signal: AbortSignal, work: Work) => Promise<V>

/** How one store's values sit in the shared backend and travel there. */
export interface SharedLayout<V> {
  readonly tier: SharedTier
  /** `value`: one backend value per key; `field`: one field of the package's record `record` per key. */
  readonly kind: 'value' | 'field'
  readonly record?: string
  encode(value: V): Promise<Uint8Array>
  decode(bytes: Buffer): Promise<V>
}

/** A retained value and the stamp it was read or written under ('' on the local backend). */
interface Near<V> {
  readonly stamp: string
  readonly value: V
}

const LOCAL: Work = Object.freeze({ stamp: '' })

/** The package group of a cache key (its first two parts: ecosystem, package name). */
export function groupOfKey(key: string): string {
  const first = key.indexOf(SEPARATOR)
  const second = key.indexOf(SEPARATOR, first + 1)
  return packageGroup(key.slice(0, first), second < 0 ? key.slice(first + 1) : key.slice(first + 1, second))
}

/** The rest of a cache key after its group, as the backend names it. */
function nameOfKey(key: string): string {
  const first = key.indexOf(SEPARATOR)
  const second = key.indexOf(SEPARATOR, first + 1)
  return second < 0 ? '' : key.slice(second + 1).split(SEPARATOR).join('|')
}

/**
 * A retaining store: a hit serves the retained value; otherwise one leader
 * loads and retains. With a shared layout the retained values are near
 * copies of the shared ones, each with the stamp it was read under: a
 * lookup is one round trip that says whether the near copy is current and
 * brings the shared value when it is not; a leader leads across the tier
 * (shared-tier.ts). A failed backend operation counts `refused` and neither
 * the near copy nor local retention stands in for it (SPEC.md 6.3).
 */
export class CachedStore<V> {
  #store: RetentionStore<Near<V>>
  #collapser: RequestCollapser<V>
  #derived: RequestCollapser<V>
  #behind: RequestCollapser<V>
  #counters: StoreCounters
  #shared: SharedLayout<V> | undefined
  #sizeOf: (value: V) => number

  constructor(store: RetentionStore<Near<V>>, counters: StoreCounters, sizeOf: (value: V) => number, shared?: SharedLayout<V>) {
    this.#store = store
    this.#counters = counters
    this.#sizeOf = sizeOf
    this.#shared = shared
    this.#collapser = new RequestCollapser<V>({ counts: { miss: () => { counters.miss++ }, collapsed: () => { counters.collapsed++ } } })
    this.#derived = new RequestCollapser<V>()
    this.#behind = new RequestCollapser<V>()
  }

  /** True when values are shared across the tier. */
  get shared(): boolean { return this.#shared !== undefined }

  /**
   * Leads or joins the load of a value derived from another this request has
   * already looked up (a coded form of an assembled answer), retained like
   * any other. Not counted: the source lookup counted the request once
   * (SPEC.md 6.3), and the caller's `peek` of `key` counted a hit.
   */
  async loadDerived(key: string, load: (signal: AbortSignal) => Promise<V>, signal?: AbortSignal, read?: ReadOptions): Promise<V> {
    const found = await this.#lookup(key, read)
    if (found.value !== undefined) return found.value
    return this.#derived.run(key, async (s) => {
      const value = await load(s)
      await this.#retain(key, value, found.stamp)
      return value
    }, signal)
  }

  /** The retained value (counted as a hit), or undefined (counted as nothing: the caller's load counts). */
  async peek(key: string, read?: ReadOptions): Promise<V | undefined> {
    const value = (await this.#lookup(key, read)).value
    if (value !== undefined) this.#counters.hit++
    return value
  }

  /** The retained value, counted as nothing: the caller decides whether it serves it (`countHit`) or loads. */
  async retained(key: string, read?: ReadOptions): Promise<V | undefined> {
    return (await this.#lookup(key, read)).value
  }

  /** Counts a backend operation on this store's behalf that failed (SPEC.md 6.3 `refused`). */
  countRefused(): void { this.#counters.refused++ }

  /** Counts a request served from a value `retained` returned. */
  countHit(): void { this.#counters.hit++ }

  /** Serves a retained value, or leads or joins the load of `key`; a leader's value is retained if it fits. */
  async load(key: string, load: TierLoad<V>, signal?: AbortSignal, read?: ReadOptions): Promise<V> {
    const hit = await this.peek(key, read)
    if (hit !== undefined) return hit
    return this.lead(key, load, signal)
  }

  /**
   * Leads or joins the load of `key` whatever is retained (a revalidation, a
   * render again), counted miss or collapsed. Across a tier, another
   * replica's result is taken only when `usable` accepts it (a retained
   * answer that is itself due for revalidation is not a result).
   */
  async lead(key: string, load: TierLoad<V>, signal?: AbortSignal, usable: (value: V) => boolean = () => true): Promise<V> {
    return this.#collapser.run(key, (s, takeover) => this.#leadAcross(key, load, s, takeover, usable), signal)
  }

  /**
   * Starts the load of `key` behind a request that was already served (a
   * revalidation while serving the retained value), unless one is in
   * flight here or, across a tier, on another replica. Counted as nothing,
   * since the request counted its hit; its value is retained, its failure
   * only reported.
   */
  behind(key: string, load: TierLoad<V>, onFailure: (error: unknown) => void): void {
    if (this.#behind.has(key)) return
    this.#behind.run(key, async (s) => {
      const shared = this.#shared
      if (shared === undefined) {
        const value = await load(s, LOCAL)
        await this.#retain(key, value, '')
        return value
      }
      let stamp: string | undefined
      const value = await shared.tier.behind(groupOfKey(key), this.#across(key, load, s, (at) => { stamp = at }))
      if (value !== undefined && stamp !== undefined) this.#near(key, value, stamp)
      return value as V
    }).catch(onFailure)
  }

  /** Retains a value produced outside `load`, locally (the local backend's API; a shared store retains through `retainMany`). */
  set(key: string, value: V): RetainResult { return this.#store.set(key, { stamp: '', value }) }

  /**
   * Retains values one leader produced beside its own (the selected versions
   * of a render) under the stamp of its work: near copies, and with a
   * shared layout one write of the package's record.
   */
  async retainMany(entries: readonly (readonly [string, V])[], work: Work): Promise<void> {
    if (work.stamp === undefined || entries.length === 0) return
    for (const [key, value] of entries) this.#near(key, value, work.stamp)
    const shared = this.#shared
    if (shared === undefined) return
    const byGroup = new Map<string, Map<string, Uint8Array>>()
    for (const [key, value] of entries) {
      const encoded = await shared.encode(value)
      if (encoded.byteLength > shared.tier.maxValueBytes) {
        this.#counters.refused++
        continue
      }
      const group = groupOfKey(key)
      let fields = byGroup.get(group)
      if (fields === undefined) byGroup.set(group, fields = new Map())
      fields.set(nameOfKey(key), encoded)
    }
    for (const [group, fields] of byGroup) {
      await shared.tier.backend.writeFields(group, work.stamp, shared.record ?? '', fields, shared.tier.ttlMs).catch(() => { this.#counters.refused++ })
    }
  }

  delete(key: string): boolean { return this.#store.delete(key) }

  /** Drops this replica's retained values of one package group. */
  forgetGroup(group: string): void { this.#store.deleteGroup(group) }

  /** Every live value retained here, least recently used first, with its key (the warm file). */
  *entries(): IterableIterator<[string, V]> {
    for (const [key, near] of this.#store.entriesByRecency()) yield [key, near.value]
  }

  snapshot(): StoreSnapshot { return this.#counters.snapshot(this.#store.residentBytes, this.#store.entries) }

  async #leadAcross(key: string, load: TierLoad<V>, signal: AbortSignal, takeover: boolean, usable: (value: V) => boolean): Promise<V> {
    const shared = this.#shared
    if (shared === undefined) {
      const value = await load(signal, LOCAL)
      this.#store.set(key, { stamp: '', value })
      return value
    }
    let stamp: string | undefined
    const result = await shared.tier.lead(groupOfKey(key), this.#across(key, load, signal, (at) => { stamp = at }, usable))
    if (result.joined && !takeover) {
      // It was counted a miss when it led here; it joined another replica's work instead (SPEC.md 6.3: collapsed).
      this.#counters.miss--
      this.#counters.collapsed++
    }
    if (result.failure !== undefined) throw result.failure
    if (stamp !== undefined) this.#near(key, result.value, stamp)
    return result.value
  }

  /** The tier's view of one load of `key`; `stampSeen` learns the stamp the value is current under. */
  #across(key: string, load: TierLoad<V>, signal: AbortSignal, stampSeen: (stamp: string) => void, usable: (value: V) => boolean = () => true): AcrossTier<V> {
    return {
      lookup: async () => {
        const found = await this.#readShared(key, undefined, undefined)
        stampSeen(found.stamp)
        return { stamp: found.stamp, value: found.value !== undefined && usable(found.value) ? found.value : undefined }
      },
      work: (stamp) => load(signal, { stamp }),
      publish: async (value, stamp) => {
        stampSeen(stamp)
        await this.#writeShared(key, value, stamp)
      },
      refused: () => { this.#counters.refused++ },
      signal,
    }
  }

  /** The near copy when current, else the shared value (retained near); on the local backend the local value. */
  async #lookup(key: string, read: ReadOptions | undefined): Promise<{ value: V | undefined, stamp: string | undefined }> {
    const near = this.#store.get(key)
    if (this.#shared === undefined) return { value: near?.value, stamp: '' }
    try {
      const found = await this.#readShared(key, near?.stamp, read)
      if (found.current && near !== undefined) return { value: near.value, stamp: found.stamp }
      if (found.value !== undefined) this.#near(key, found.value, found.stamp)
      else if (near !== undefined) this.#store.delete(key)
      return found
    } catch {
      // SPEC.md 6.3: a failed backend read goes to the origin; the near copy cannot say it is current, so it is not used.
      this.#counters.refused++
      return { value: undefined, stamp: undefined }
    }
  }

  async #readShared(key: string, known: string | undefined, read: ReadOptions | undefined): Promise<{ value: V | undefined, stamp: string, current: boolean }> {
    const shared = this.#shared as SharedLayout<V>
    const backend = shared.tier.backend
    const group = groupOfKey(key)
    const answer = shared.kind === 'field'
      ? await backend.readField(group, shared.record ?? '', nameOfKey(key), known)
      : await backend.read(group, nameOfKey(key), known)
    if (answer.value === undefined) return { value: undefined, stamp: answer.stamp, current: answer.current }
    await read?.charge?.(answer.value.byteLength)
    let value: V
    try {
      value = await shared.decode(answer.value)
    } catch (error) {
      throw new ServiceError('CACHE_BACKEND_FAILED', { message: 'a shared value could not be read', cause: error })
    }
    await read?.charge?.(this.#sizeOf(value))
    return { value, stamp: answer.stamp, current: false }
  }

  async #writeShared(key: string, value: V, stamp: string): Promise<void> {
    const shared = this.#shared as SharedLayout<V>
    const encoded = await shared.encode(value)
    if (encoded.byteLength > shared.tier.maxValueBytes) {
      this.#counters.refused++
      return
    }
    const group = groupOfKey(key)
    const write = shared.kind === 'field'
      ? shared.tier.backend.writeFields(group, stamp, shared.record ?? '', new Map([[nameOfKey(key), encoded]]), shared.tier.ttlMs)
      : shared.tier.backend.write(group, stamp, nameOfKey(key), encoded, shared.tier.ttlMs)
    await write.catch(() => { this.#counters.refused++ })
  }

  /** Retains `value` near and, on a shared store, in the backend, under `stamp`; undefined: the backend failed, nothing is retained. */
  async #retain(key: string, value: V, stamp: string | undefined): Promise<void> {
    if (stamp === undefined) return
    this.#near(key, value, stamp)
    if (this.#shared !== undefined) await this.#writeShared(key, value, stamp)
  }

  #near(key: string, value: V, stamp: string): void {
    this.#store.set(key, { stamp, value })
  }
}

export interface MetadataCacheOptions<S> {
  /** `cache.maxBytes`: the shared byte bound. */
  readonly maxBytes: number
  /** The shared entry bound. */
  readonly maxEntries: number
  readonly clock: Clock
  /** Accounted bytes of a selected version record. */
  readonly selectedVersionSize: (value: S) => number
  readonly selectedVersionTtlMs?: number
  readonly assembledTtlMs?: number
  /** Another mount's cache whose byte and entry bound this one shares (one `cache.maxBytes` for the process). */
  readonly shareBudgetWith?: { readonly budget: CacheBudget }
  /** The shared backend (`cache.backend: redis`); absent: the local backend. */
  readonly shared?: SharedTier | undefined
  /** `cache.privateMissSeconds` in milliseconds: how long a private packument miss is remembered (default 0: not remembered). */
  readonly privateMissMs?: number
}

export interface MetadataCacheSnapshot {
  readonly full: StoreSnapshot
  readonly version: StoreSnapshot
  readonly assembled: StoreSnapshot
  readonly maxBytes: number
  readonly maxEntries: number
  readonly residentBytes: number
  readonly entries: number
}

interface AssembledHeader {
  readonly etag: string
  readonly coding?: 'br' | 'gzip'
  readonly freshness?: Freshness
}

/** An assembled answer on the wire: its tag, coding and freshness, then its body (compressed when identity). */
const ASSEMBLED_CODEC = {
  encode: (value: AssembledResponse) => encodeValue<AssembledHeader>({
    etag: value.etag,
    ...(value.coding === undefined ? {} : { coding: value.coding }),
    ...(value.freshness === undefined ? {} : { freshness: value.freshness }),
  }, value.body, value.coding === undefined),
  decode: async (bytes: Buffer): Promise<AssembledResponse> => {
    const { header, bytes: body } = await decodeValue<AssembledHeader>(bytes)
    return { body, etag: header.etag, ...(header.coding === undefined ? {} : { coding: header.coding }), ...(header.freshness === undefined ? {} : { freshness: header.freshness }) }
  },
}

/** A selected-version record on the wire: its JSON (a few hundred bytes: not worth compressing). */
function recordCodec<S>(): Pick<SharedLayout<S>, 'encode' | 'decode'> {
  return {
    encode: async (value) => Buffer.from(JSON.stringify(value), 'utf8'),
    decode: async (bytes) => JSON.parse(bytes.toString('utf8')) as S,
  }
}

export class MetadataCache<S> {
  readonly full: FullDocumentStore
  readonly version: CachedStore<S>
  readonly assembled: CachedStore<AssembledResponse>
  #budget: CacheBudget
  #shared: SharedTier | undefined

  constructor(options: MetadataCacheOptions<S>) {
    const budget = options.shareBudgetWith?.budget ?? new CacheBudget(options.maxBytes, options.maxEntries)
    this.#budget = budget
    const tier = options.shared
    this.#shared = tier
    this.full = new FullDocumentStore({ clock: options.clock, privateMissMs: options.privateMissMs ?? 0, shared: tier })
    const versionCounters = new StoreCounters()
    const versionSize = (near: Near<S>): number => options.selectedVersionSize(near.value) + near.stamp.length
    this.version = new CachedStore(new RetentionStore<Near<S>>({
      budget,
      clock: options.clock,
      ttlMs: options.selectedVersionTtlMs ?? DEFAULT_SELECTED_VERSION_TTL_MS,
      sizeOf: versionSize,
      counters: versionCounters,
      groupOf: groupOfKey,
    }), versionCounters, options.selectedVersionSize, tier === undefined ? undefined : { tier, kind: 'field', record: 'versions', ...recordCodec<S>() })
    const assembledCounters = new StoreCounters()
    this.assembled = new CachedStore(new RetentionStore<Near<AssembledResponse>>({
      budget,
      clock: options.clock,
      ttlMs: options.assembledTtlMs ?? DEFAULT_ASSEMBLED_TTL_MS,
      sizeOf: (near) => assembledSize(near.value) + near.stamp.length,
      counters: assembledCounters,
      groupOf: groupOfKey,
    }), assembledCounters, assembledSize, tier === undefined ? undefined : { tier, kind: 'value', ...ASSEMBLED_CODEC })
  }

  get budget(): CacheBudget { return this.#budget }

  /** True when the cache is shared across a tier (`cache.backend: redis`). */
  get shared(): boolean { return this.#shared !== undefined }

  /**
   * Forgets what this process holds of one package (its private side
   * changed: a publish relayed here, a mirror success, a Dredger removal).
   * With a shared backend the package's stamp moves too (shared-backend.ts
   * `backendInvalidation`); this drops the near copies at once rather than
   * at their next lookup.
   */
  forget(ecosystem: string, packageName: string): void {
    const group = packageGroup(ecosystem, packageName)
    this.version.forgetGroup(group)
    this.assembled.forgetGroup(group)
    this.full.forgetGroup(group)
  }

  /**
   * Invalidates one package (docs/cache.md "Invalidation"): forgets it here
   * and, with a shared backend, moves its stamp there, so every replica's
   * next lookup of it misses. A failed bump counts refused (on the
   * assembled store, whose answers it was for) and rejects.
   */
  async invalidate(ecosystem: string, packageName: string): Promise<void> {
    this.forget(ecosystem, packageName)
    const tier = this.#shared
    if (tier === undefined) return
    try {
      await tier.backend.bump(packageGroup(ecosystem, packageName))
    } catch (error) {
      this.assembled.countRefused()
      throw error
    }
  }

  snapshot(): MetadataCacheSnapshot {
    return Object.freeze({
      full: this.full.snapshot(),
      version: this.version.snapshot(),
      assembled: this.assembled.snapshot(),
      maxBytes: this.#budget.maxBytes,
      maxEntries: this.#budget.maxEntries,
      residentBytes: this.#budget.residentBytes,
      entries: this.#budget.entries,
    })
  }
}

function sumStores(a: StoreSnapshot, b: StoreSnapshot): StoreSnapshot {
  return Object.freeze({
    hit: a.hit + b.hit, miss: a.miss + b.miss, collapsed: a.collapsed + b.collapsed, refused: a.refused + b.refused,
    residentBytes: a.residentBytes + b.residentBytes, entries: a.entries + b.entries,
  })
}

/** The counters of caches sharing one budget, as one (SPEC.md 6.3 counts the process's cache, not a mount's). */
export function combinedSnapshot(caches: readonly { snapshot(): MetadataCacheSnapshot }[]): MetadataCacheSnapshot | undefined {
  const [first, ...rest] = caches.map((c) => c.snapshot())
  if (first === undefined) return undefined
  return rest.reduce((a, b) => Object.freeze({
    full: sumStores(a.full, b.full), version: sumStores(a.version, b.version), assembled: sumStores(a.assembled, b.assembled),
    maxBytes: a.maxBytes, maxEntries: a.maxEntries, residentBytes: a.residentBytes, entries: a.entries,
  }), first)
}
