/**
 * The full-document store (SPEC.md 6.3 `service.metadata_cache.requests`):
 * every upstream document read of a listing is counted here. No document is
 * retained (entries and bytes stay zero); each upstream read counts a miss.
 *
 * It remembers one thing (issue 29 item 2, docs/cache.md "The private
 * registry's misses"): that the private registry does not have a package,
 * for `cache.privateMissSeconds`, so the next listing of that package does
 * not ask it again; each use of that memory counts a hit. On the local
 * backend the memory is this process's; on the shared backend it sits in
 * the package's group, so the tier shares it and an invalidation (a publish
 * relayed here, a mirror success, a Dredger removal) makes it unreachable on
 * every replica at once. A failed shared read asks the private registry
 * (counted refused), a failed write remembers nothing (SPEC.md 6.3).
 *
 * Beside it, which render of a package last had a definite answer from the
 * private registry (a document or a miss, not a failure): the artifact
 * route skips the private leg for a file whose selected-version record that
 * render wrote (packument-service.ts `publicSourced`), for the same
 * `cache.privateMissSeconds`. On the local backend the process's render
 * numbers say it; on the shared backend, under the package's stamp (so an
 * invalidation on any replica or role ends it tier-wide), a marker names
 * the last such render (`private-answered`: a random id, or `none` after a
 * render whose private read failed) and a record of that render lists the
 * file names it took from the public side (`public-sourced|<id>`). A render
 * writes its record before its marker, so a marker never names a record
 * that is not there; a later render's marker makes every older record
 * unreachable.
 */
import { randomBytes } from 'node:crypto'
import type { Clock } from '../clock.js'
import type { ChargedFetch } from '../listing/charged-fetch.js'
import { StoreCounters, type StoreSnapshot } from './cache-counters.js'
import { packageGroup } from './shared-backend.js'
import type { SharedTier } from './shared-tier.js'

/** The name of the remembered miss inside a package's shared group. */
export const PRIVATE_MISS_NAME = 'private-miss'

/** The shared marker of the last render with a definite private answer, and the prefix of that render's record of public-sourced files. */
export const PRIVATE_ANSWERED_NAME = 'private-answered'
const PUBLIC_SOURCED_PREFIX = 'public-sourced|'
/** The marker after a render whose private read failed: no file skips the private leg. */
const NO_RENDER = 'none'

/** At most this many remembered private misses per process (local backend); the oldest go first. */
const LOCAL_MISSES = 10_000

export interface FullDocumentStoreOptions {
  readonly clock: Clock
  /** `cache.privateMissSeconds` in milliseconds; 0: a private miss is not remembered. */
  readonly privateMissMs: number
  readonly shared?: SharedTier | undefined
}

export class FullDocumentStore {
  readonly #counters = new StoreCounters()
  readonly #clock: Clock
  readonly #missMs: number
  readonly #shared: SharedTier | undefined
  /** Local backend: package group to the end of its remembered private miss. */
  readonly #misses = new Map<string, number>()
  /** Local backend: package group to the last render that had the private side's answer, and when that knowledge ends. */
  readonly #answered = new Map<string, { readonly render: number, readonly until: number }>()
  /** Moves on every forget: a private read that spanned one does not remember its miss (it may predate the change). */
  #forgets = 0

  constructor(options: FullDocumentStoreOptions) {
    this.#clock = options.clock
    this.#missMs = options.privateMissMs
    this.#shared = options.shared
  }

  /** Counts a failed shared-backend operation on this store's behalf (a kept document's read or write, SPEC.md 6.3). */
  countRefused(): void { this.#counters.refused++ }

  /** One upstream document read (counted as a miss). */
  read(): void { this.#counters.miss++ }

  /**
   * The private registry's document of one package: a remembered miss
   * answers `miss` without asking (a hit); otherwise `ask` reads it (a miss),
   * and a miss it answers is remembered for `cache.privateMissSeconds`.
   */
  async readPrivate(ecosystem: string, packageName: string, ask: () => Promise<ChargedFetch>): Promise<ChargedFetch> {
    if (this.#missMs <= 0) {
      this.#counters.miss++
      return ask()
    }
    const group = packageGroup(ecosystem, packageName)
    const known = await this.#known(group)
    if (known.missing) {
      this.#counters.hit++
      return { kind: 'miss' }
    }
    this.#counters.miss++
    const forgets = this.#forgets
    const fetched = await ask()
    if (fetched.kind === 'miss' && forgets === this.#forgets) await this.#remember(group, known.stamp)
    return fetched
  }

  /** Forgets what this process remembers of one package group (its private side changed). */
  forgetGroup(group: string): void {
    this.#forgets++
    this.#misses.delete(group)
    this.#answered.delete(group)
  }

  /** True when misses are remembered at all (`cache.privateMissSeconds` above 0). */
  get remembersMisses(): boolean { return this.#missMs > 0 }

  /**
   * Records the render of a package that just retained its selected
   * versions: `render` when the private side gave it a definite answer,
   * undefined when it failed (nothing is known of the private side then).
   */
  noteRender(ecosystem: string, packageName: string, render: number | undefined): void {
    if (this.#missMs <= 0 || this.#shared !== undefined) return
    const group = packageGroup(ecosystem, packageName)
    this.#answered.delete(group)
    if (render === undefined) return
    this.#answered.set(group, { render, until: this.#clock.now() + this.#missMs })
    if (this.#answered.size > LOCAL_MISSES) this.#answered.delete(this.#answered.keys().next().value as string)
  }

  /**
   * The shared backend's `noteRender`: after a render under `stamp` (the
   * stamp its work read; undefined: the backend failed, nothing is written)
   * that took `publicFiles` from the public side, with a definite private
   * answer or not. Failures count refused and write nothing more.
   */
  async noteSharedRender(ecosystem: string, packageName: string, definite: boolean, publicFiles: readonly string[], stamp: string | undefined): Promise<void> {
    const shared = this.#shared
    if (this.#missMs <= 0 || shared === undefined || stamp === undefined) return
    const group = packageGroup(ecosystem, packageName)
    const id = definite && publicFiles.length > 0 ? randomBytes(8).toString('hex') : NO_RENDER
    try {
      if (id !== NO_RENDER) {
        const until = Buffer.from(String(this.#clock.now() + this.#missMs), 'utf8')
        await shared.backend.writeFields(group, stamp, PUBLIC_SOURCED_PREFIX + id, new Map(publicFiles.map((file) => [file, until])), this.#missMs)
      }
      await shared.backend.write(group, stamp, PRIVATE_ANSWERED_NAME, Buffer.from(id, 'utf8'), this.#missMs)
    } catch {
      this.#counters.refused++
    }
  }

  /**
   * The shared backend's `answeredRender` for one file: true when the last
   * render with a definite private answer (under the package's current
   * stamp, within `cache.privateMissSeconds`) took `filename` from the
   * public side. Two reads of a few bytes each; a failed one says false
   * (the private registry is asked) and counts refused.
   */
  async sharedPublicSourced(ecosystem: string, packageName: string, filename: string): Promise<boolean> {
    const shared = this.#shared
    if (this.#missMs <= 0 || shared === undefined) return false
    const group = packageGroup(ecosystem, packageName)
    try {
      const marker = (await shared.backend.read(group, PRIVATE_ANSWERED_NAME)).value?.toString('utf8')
      if (marker === undefined || marker === NO_RENDER) return false
      const until = (await shared.backend.readField(group, PUBLIC_SOURCED_PREFIX + marker, filename)).value
      return until !== undefined && this.#clock.now() < Number(until.toString('utf8'))
    } catch {
      this.#counters.refused++
      return false
    }
  }

  /** The last render of a package that had the private side's answer, while that knowledge lasts. */
  answeredRender(ecosystem: string, packageName: string): number | undefined {
    const group = packageGroup(ecosystem, packageName)
    const answered = this.#answered.get(group)
    if (answered === undefined) return undefined
    if (answered.until > this.#clock.now()) return answered.render
    this.#answered.delete(group)
    return undefined
  }

  snapshot(): StoreSnapshot { return this.#counters.snapshot(0, 0) }

  /** Whether a miss of `group` is remembered, and (shared backend) the stamp a new one is written under; no stamp: write nothing. */
  async #known(group: string): Promise<{ missing: boolean, stamp: string | undefined }> {
    const now = this.#clock.now()
    const shared = this.#shared
    if (shared === undefined) {
      const until = this.#misses.get(group)
      if (until !== undefined && until <= now) this.#misses.delete(group)
      return { missing: until !== undefined && now < until, stamp: '' }
    }
    try {
      const answer = await shared.backend.read(group, PRIVATE_MISS_NAME)
      if (answer.value === undefined) return { missing: false, stamp: answer.stamp }
      // The value is the end of the memory; the key's own time to live ends it too.
      return { missing: now < Number(answer.value.toString('utf8')), stamp: answer.stamp }
    } catch {
      // SPEC.md 6.3: the private registry answers instead, and nothing is written.
      this.#counters.refused++
      return { missing: false, stamp: undefined }
    }
  }

  async #remember(group: string, stamp: string | undefined): Promise<void> {
    const until = this.#clock.now() + this.#missMs
    const shared = this.#shared
    if (shared === undefined) {
      this.#misses.delete(group)
      this.#misses.set(group, until)
      if (this.#misses.size > LOCAL_MISSES) this.#misses.delete(this.#misses.keys().next().value as string)
      return
    }
    if (stamp === undefined) return
    // Written under the stamp read before the private read: an invalidation meanwhile leaves it unreachable.
    await shared.backend.write(group, stamp, PRIVATE_MISS_NAME, Buffer.from(String(until), 'utf8'), this.#missMs).catch(() => { this.#counters.refused++ })
  }
}
