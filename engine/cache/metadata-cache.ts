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
import { RequestCollapser, type Load } from './collapse.js'
import { RetentionStore, type RetainResult } from './retention-store.js'

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

/** A retaining store: a hit serves the retained value; otherwise one leader loads and retains. */
export class CachedStore<V> {
  #store: RetentionStore<V>
  #collapser: RequestCollapser<V>
  #derived: RequestCollapser<V>
  #behind: RequestCollapser<V>
  #counters: StoreCounters

  constructor(store: RetentionStore<V>, counters: StoreCounters) {
    this.#store = store
    this.#counters = counters
    this.#collapser = new RequestCollapser<V>({
      counts: { miss: () => { counters.miss++ }, collapsed: () => { counters.collapsed++ } },
      onValue: (key, value) => { store.set(key, value) },
    })
    this.#derived = new RequestCollapser<V>({ onValue: (key, value) => { store.set(key, value) } })
    this.#behind = new RequestCollapser<V>({ onValue: (key, value) => { store.set(key, value) } })
  }

  /**
   * Leads or joins the load of a value derived from another this request has
   * already looked up (a coded form of an assembled answer), retained like
   * any other. Not counted: the source lookup counted the request once
   * (SPEC.md 6.3), and the caller's `peek` of `key` counted a hit.
   */
  async loadDerived(key: string, load: Load<V>, signal?: AbortSignal): Promise<V> {
    return this.#store.get(key) ?? this.#derived.run(key, load, signal)
  }

  /** The retained value (counted as a hit), or undefined (counted as nothing: the caller's load counts). */
  peek(key: string): V | undefined {
    const value = this.#store.get(key)
    if (value !== undefined) this.#counters.hit++
    return value
  }

  /** The retained value, counted as nothing: the caller decides whether it serves it (`countHit`) or loads. */
  retained(key: string): V | undefined { return this.#store.get(key) }

  /** Counts a request served from a value `retained` returned. */
  countHit(): void { this.#counters.hit++ }

  /** Serves a retained value, or leads or joins the load of `key`; a leader's value is retained if it fits. */
  async load(key: string, load: Load<V>, signal?: AbortSignal): Promise<V> {
    const hit = this.peek(key)
    if (hit !== undefined) return hit
    return this.#collapser.run(key, load, signal)
  }

  /** Leads or joins the load of `key` whatever is retained (a revalidation, a render again), counted miss or collapsed. */
  async lead(key: string, load: Load<V>, signal?: AbortSignal): Promise<V> {
    return this.#collapser.run(key, load, signal)
  }

  /**
   * Starts the load of `key` behind a request that was already served (a
   * revalidation while serving the retained value), unless one is in
   * flight: concurrent ones collapse. Counted as nothing, since the request
   * counted its hit; its value is retained, its failure only reported.
   */
  behind(key: string, load: Load<V>, onFailure: (error: unknown) => void): void {
    if (this.#behind.has(key)) return
    this.#behind.run(key, load).catch(onFailure)
  }

  /** Retains a value produced outside `load`. */
  set(key: string, value: V): RetainResult { return this.#store.set(key, value) }

  delete(key: string): boolean { return this.#store.delete(key) }

  snapshot(): StoreSnapshot { return this.#counters.snapshot(this.#store.residentBytes, this.#store.entries) }
}

/**
 * The full-document store of the local backend, which never retains full
 * metadata (SPEC.md 6.3): it counts reads and nothing else. It does not
 * collapse them either: a full document is read only inside the leader's
 * assembled load, so identical requests have already collapsed by then, and
 * sharing one read between two different renders cannot work, since a
 * render moves its chunks into a worker (workers/packument-client.ts).
 */
export class FullDocumentReads {
  readonly #counters = new StoreCounters()

  /** One upstream document read (private or public). */
  read(): void { this.#counters.miss++ }

  snapshot(): StoreSnapshot { return this.#counters.snapshot(0, 0) }
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

export class MetadataCache<S> {
  readonly full: FullDocumentReads
  readonly version: CachedStore<S>
  readonly assembled: CachedStore<AssembledResponse>
  #budget: CacheBudget

  constructor(options: MetadataCacheOptions<S>) {
    const budget = options.shareBudgetWith?.budget ?? new CacheBudget(options.maxBytes, options.maxEntries)
    this.#budget = budget
    this.full = new FullDocumentReads()
    const versionCounters = new StoreCounters()
    this.version = new CachedStore(new RetentionStore<S>({
      budget,
      clock: options.clock,
      ttlMs: options.selectedVersionTtlMs ?? DEFAULT_SELECTED_VERSION_TTL_MS,
      sizeOf: options.selectedVersionSize,
      counters: versionCounters,
    }), versionCounters)
    const assembledCounters = new StoreCounters()
    this.assembled = new CachedStore(new RetentionStore<AssembledResponse>({
      budget,
      clock: options.clock,
      ttlMs: options.assembledTtlMs ?? DEFAULT_ASSEMBLED_TTL_MS,
      sizeOf: assembledSize,
      counters: assembledCounters,
    }), assembledCounters)
  }

  get budget(): CacheBudget { return this.#budget }

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
