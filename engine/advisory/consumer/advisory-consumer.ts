/**
 * The proxy's consumer of one mount's advisory artifact (SPEC.md 2.9, 3.1,
 * 3.4, 3.5, 6.2): it polls the object store, loads a new generation,
 * validates it and swaps it into the mount's AdvisorySlot, which every
 * worker reads through one SharedArrayBuffer.
 *
 * Each poll is one HEAD of the artifact's key, compared by ETag with the
 * generation being served and with the last rejected one:
 * - a new ETag is downloaded straight into a SharedArrayBuffer (the one copy
 *   of DESIGN.md), verified (checksum and bounds walk), checked for its
 *   ecosystem and, on an EPSS-dependent mount, for the exact marker
 *   `epss_status=available` (SPEC.md 3.1), then swapped in;
 * - a rejected artifact leaves the serving generation, and its age, as they
 *   are; its ETag is remembered, so repeated HEADs of the same rejected
 *   object neither download it again nor refresh any age (SPEC.md 3.5);
 * - the served ETag with a later publication time is Pilot's re-push of
 *   identical bytes (SPEC.md 2.9: every successful run moves the push time),
 *   so the publication time is refreshed without downloading.
 *   Why not a conditional HEAD (If-None-Match): a match answers 304 without
 *   the publication time, and then a re-push of the same bytes could never
 *   refresh the age; an unconditional HEAD costs the same round trip.
 *
 * A restart makes a new consumer over an empty slot (SPEC.md 3.1 rule 2):
 * nothing is read from disk until its first poll. Every tick ends with the
 * half-maximum check of the push age (push-age.ts) on the injected clock.
 */
import type { Clock } from '../../clock.js'
import { isServiceError, ServiceError, toServiceError } from '../../errors.js'
import type { Logger } from '../../log/logger.js'
import type { ObjectBody, ObjectStore } from '../../store/object-store.js'
import type { AdvisorySlot, ServingArtifact } from './advisory-slot.js'
import { UNRECORDED } from '../artifact/database.js'
import { loadAdvisoryArtifact, openSharedAdvisoryArtifact } from '../artifact/compiled-database.js'
import type { AdvisoryDatabase, Ecosystem } from '../artifact/database.js'
import { PushAgeAlarm } from './push-age.js'
import { SyncFetchFailures } from './sync-fetch-failures.js'

/** info: one line per swap of the serving artifact (SPEC.md 6.2). */
export const ADVISORY_SWAPPED = 'advisory database swapped in'
/** error: the swapped-in artifact has no publication time, so it counts as expired (SPEC.md 3.5). */
export const ADVISORY_NO_PUBLICATION_TIME = 'advisory artifact has no publication time; treated as expired'
/** error: an artifact was refused; the serving generation is kept (SPEC.md 3.1 rule 2). */
export const ADVISORY_REJECTED = 'advisory artifact rejected'

/**
 * Largest artifact the consumer will hold. The whole npm export compiles to
 * tens of MiB (bench/scenarios/advisory-compile.ts); anything near this bound
 * is not an artifact Pilot wrote.
 */
export const MAX_ADVISORY_ARTIFACT_BYTES = 1024 * 1024 * 1024

export type PollOutcome =
  /** No object under the key yet (Pilot has not published). */
  | 'absent'
  /** The serving generation is the current object. */
  | 'unchanged'
  /** The serving generation's publication time moved (a re-push of the same bytes). */
  | 'refreshed'
  | 'swapped'
  | 'rejected'
  /** The current object is one already rejected: not downloaded again. */
  | 'rejected-again'
  /** The store could not be read (SPEC.md 3.4). */
  | 'failed'

export interface AdvisoryConsumerOptions {
  readonly ecosystem: Ecosystem
  readonly store: ObjectStore
  /** The artifact's object key (advisory-object-key.ts). */
  readonly key: string
  readonly slot: AdvisorySlot
  /** EPSS-dependent mount (a DenyIfEpss rule): only `epss_status=available` qualifies (SPEC.md 3.1). */
  readonly requireEpss: boolean
  /** The mount's maximum push age (engine/policy/advisory-max-age.ts), seconds. */
  readonly maxAgeSeconds: number
  readonly clock: Clock
  readonly logger: Logger
  /** Called after each accepted generation is swapped in (readiness: SPEC.md 3.1, one way). */
  readonly onAccepted?: (serving: ServingArtifact) => void
}

export class AdvisoryConsumer {
  readonly #options: AdvisoryConsumerOptions
  readonly #failures: SyncFetchFailures
  readonly #alarm: PushAgeAlarm
  #rejectedEtag: string | undefined
  #inFlight: Promise<PollOutcome> | undefined
  #timer: NodeJS.Timeout | undefined
  #stopped = false

  constructor(options: AdvisoryConsumerOptions) {
    this.#options = options
    this.#failures = new SyncFetchFailures({ ecosystem: options.ecosystem, key: options.key, clock: options.clock, logger: options.logger })
    this.#alarm = new PushAgeAlarm({ ecosystem: options.ecosystem, maxAgeSeconds: options.maxAgeSeconds, logger: options.logger })
  }

  get ecosystem(): Ecosystem { return this.#options.ecosystem }

  /** Whole seconds since the serving push, or undefined with none (or no publication time). */
  pushAgeSeconds(): number | undefined {
    const at = this.#options.slot.serving?.publishedAt
    if (at === undefined) return undefined
    return Math.max(0, Math.floor((this.#options.clock.now() - at.getTime()) / 1000))
  }

  /**
   * Whole seconds since the serving database was compiled
   * (`service.advisory.database.age.seconds`), or undefined while none is
   * serving: the metric reports nothing before the first artifact loads.
   */
  databaseAgeSeconds(): number | undefined {
    const compiled = this.#options.slot.serving?.database.metadata.compiledAt
    if (compiled === undefined) return undefined
    return Math.max(0, Math.floor((this.#options.clock.now() - compiled.getTime()) / 1000))
  }

  /** Polls now and then every `intervalMs` until stopped; polls never overlap. */
  start(intervalMs: number): void {
    if (!Number.isFinite(intervalMs) || intervalMs <= 0) throw new RangeError(`intervalMs must be positive, got ${intervalMs}`)
    const tick = (): void => {
      void this.poll().finally(() => {
        if (this.#stopped) return
        this.#timer = setTimeout(tick, intervalMs)
        // The listener keeps a serving process alive; a poll timer must not keep a stopping one.
        this.#timer.unref()
      })
    }
    tick()
  }

  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    await this.#inFlight
  }

  /** One poll tick. Never throws: failures are logged (SPEC.md 3.4) and reported as 'failed'. */
  poll(): Promise<PollOutcome> {
    this.#inFlight ??= this.#tick().finally(() => { this.#inFlight = undefined })
    return this.#inFlight
  }

  async #tick(): Promise<PollOutcome> {
    let outcome: PollOutcome
    try {
      outcome = await this.#sync()
      this.#failures.succeeded()
    } catch (error) {
      this.#failures.failed(toServiceError(error, 'STORE_FAILURE'))
      outcome = 'failed'
    }
    this.#alarm.check(this.#options.slot.serving?.publishedAt, this.#options.clock.now())
    return outcome
  }

  async #sync(): Promise<PollOutcome> {
    const { store, key, slot } = this.#options
    const head = await store.head(key)
    if (head === undefined || head.notModified) return 'absent'
    if (head.etag === this.#rejectedEtag) return 'rejected-again'
    const serving = slot.serving
    if (serving !== undefined && head.etag === serving.etag) {
      if (sameInstant(head.publishedAt, serving.publishedAt)) return 'unchanged'
      // Same bytes, pushed again: the shared copy stays; only the push time moves.
      this.#accept({
        database: openSharedAdvisoryArtifact(serving.shared, head.publishedAt),
        shared: serving.shared,
        publishedAt: head.publishedAt,
        etag: serving.etag,
      })
      return 'refreshed'
    }

    const body = await store.get(key)
    if (body === undefined) return 'absent'
    if (body.etag === this.#rejectedEtag) {
      body.stream.destroy()
      return 'rejected-again'
    }
    if (body.size > MAX_ADVISORY_ARTIFACT_BYTES) {
      body.stream.destroy()
      return this.#reject(body.etag, `the object is ${body.size} bytes, above the ${MAX_ADVISORY_ARTIFACT_BYTES}-byte bound`)
    }
    const shared = await readShared(body)
    let database: AdvisoryDatabase
    try {
      database = loadAdvisoryArtifact(shared, body.publishedAt)
    } catch (error) {
      if (isServiceError(error, 'ADVISORY_ARTIFACT_INVALID')) return this.#reject(body.etag, error.message)
      throw error
    }
    const problem = this.#disqualification(database)
    if (problem !== undefined) return this.#reject(body.etag, problem)
    this.#accept({ database, shared, publishedAt: body.publishedAt, etag: body.etag })
    return 'swapped'
  }

  /** Why this artifact cannot serve this mount, or undefined when it qualifies (SPEC.md 3.1). */
  #disqualification(database: AdvisoryDatabase): string | undefined {
    const { ecosystem, requireEpss } = this.#options
    if (database.ecosystem !== ecosystem) return `the artifact is for ecosystem ${database.ecosystem}, not ${ecosystem}`
    const status = database.metadata.epssStatus
    if (requireEpss && status !== 'available') {
      return `the mount denies on EPSS and the artifact's epss_status is ${status ?? UNRECORDED}, not available`
    }
    return undefined
  }

  #reject(etag: string, reason: string): PollOutcome {
    const { ecosystem, key, slot, logger } = this.#options
    this.#rejectedEtag = etag
    logger.error(ADVISORY_REJECTED, {
      ecosystem, key, etag, reason,
      kept: slot.serving === undefined ? 'none (the slot stays empty)' : slot.serving.etag,
    })
    return 'rejected'
  }

  #accept(serving: ServingArtifact): void {
    const { ecosystem, key, slot, logger } = this.#options
    slot.swap(serving)
    const m = serving.database.metadata
    logger.info(ADVISORY_SWAPPED, {
      ecosystem,
      key,
      etag: serving.etag,
      publishedAt: serving.publishedAt?.toISOString() ?? UNRECORDED,
      osvSource: m.osvSource,
      newestAdvisoryAt: m.newestAdvisoryAt?.toISOString() ?? UNRECORDED,
      epssScoreDate: m.epssScoreDate?.toISOString() ?? UNRECORDED,
      epssStatus: m.epssStatus ?? UNRECORDED,
      rowCount: m.rowCount,
      generation: slot.generation,
    })
    if (serving.publishedAt === undefined || Number.isNaN(serving.publishedAt.getTime())) {
      logger.error(ADVISORY_NO_PUBLICATION_TIME, { ecosystem, key, etag: serving.etag })
    }
    this.#options.onAccepted?.(serving)
  }
}

function sameInstant(a: Date | undefined, b: Date | undefined): boolean {
  return a === undefined ? b === undefined : b !== undefined && a.getTime() === b.getTime()
}

/** Streams the body into a SharedArrayBuffer of its announced size: the one copy every worker shares. */
async function readShared(body: ObjectBody): Promise<SharedArrayBuffer> {
  const shared = new SharedArrayBuffer(body.size)
  const view = new Uint8Array(shared)
  let offset = 0
  try {
    for await (const chunk of body.stream as AsyncIterable<Uint8Array>) {
      if (offset + chunk.byteLength > view.byteLength) {
        throw new ServiceError('STORE_FAILURE', { message: `the advisory object is longer than its announced ${body.size} bytes` })
      }
      view.set(chunk, offset)
      offset += chunk.byteLength
    }
  } catch (error) {
    body.stream.destroy()
    throw toServiceError(error, 'STORE_FAILURE')
  }
  if (offset !== view.byteLength) {
    throw new ServiceError('STORE_FAILURE', { message: `the advisory object ended after ${offset} of its ${body.size} bytes` })
  }
  return shared
}
