/**
 * One upstream credential, minted on demand and cached until shortly before
 * it expires, behind the credential breaker (SPEC.md 3.6, 5.5, 8).
 *
 * - Demand-driven: nothing refreshes in the background; an idle credential
 *   may expire. A token is minted when a caller needs one and the cached one
 *   is missing, expired, or inside the refresh margin (a still-valid token
 *   is returned if that refresh fails or the breaker is open).
 * - Callers that need a mint at the same time share one.
 * - The breaker: FAILURE_THRESHOLD (5) consecutive mint failures open it for
 *   COOLDOWN_MS (60 s). While open, a caller without a valid cached token
 *   gets CREDENTIAL_BREAKER_OPEN at once (503 with Retry-After, the seconds
 *   left); those refusals are not refresh attempts and are not counted.
 *   When the cooldown ends, exactly one mint probes; other callers without
 *   a valid token keep getting the refusal meanwhile. The probe's success
 *   closes the breaker; its failure opens it for another cooldown
 *   (SPEC.md leaves this "not shown"; re-opening is the conservative choice).
 *   A probe cancelled by its caller is released: no outcome is emitted and
 *   the next caller may probe at once.
 * - The eager construction mint (`prime`) emits neither a refresh event nor
 *   an expiry observation; a credential without an expiry (static) never
 *   emits an expiry observation.
 * - No token ever reaches a log line or an error: tokens are BearerToken
 *   values, and a mint failure is reported by its code only.
 */
import type { Clock } from '../../clock.js'
import { ServiceError } from '../../errors.js'
import type { BearerToken } from '../../secret.js'
import type { CredentialCounters, ProviderLabel } from './credential-counters.js'

export const FAILURE_THRESHOLD = 5
export const COOLDOWN_MS = 60_000
/** Refresh this long before expiry, or at half the lifetime for a shorter-lived token. */
export const REFRESH_MARGIN_MS = 5 * 60_000

export interface MintedCredential {
  readonly token: BearerToken
  /** Milliseconds since the epoch; undefined: does not expire. */
  readonly expiresAt?: number
}

export type Mint = (signal: AbortSignal) => Promise<MintedCredential>

export interface CredentialSourceOptions {
  readonly label: ProviderLabel
  readonly mint: Mint
  readonly clock: Clock
  readonly counters: CredentialCounters
}

interface Cached {
  readonly token: BearerToken
  readonly expiresAt: number | undefined
  readonly refreshAt: number | undefined
}

interface Flight {
  readonly promise: Promise<Cached>
  readonly controller: AbortController
  waiters: number
}

export type BreakerState = 'closed' | 'open' | 'probing' | 'half-open'

export class CredentialSource {
  readonly label: ProviderLabel
  readonly #mint: Mint
  readonly #clock: Clock
  readonly #counters: CredentialCounters
  #cached: Cached | undefined
  #flight: Flight | undefined
  #failures = 0
  /** While set: open until this instant; after it, the next mint is the probe. */
  #openUntil: number | undefined

  constructor(options: CredentialSourceOptions) {
    this.label = options.label
    this.#mint = options.mint
    this.#clock = options.clock
    this.#counters = options.counters
  }

  get breaker(): BreakerState {
    if (this.#openUntil === undefined) return 'closed'
    if (this.#clock.now() < this.#openUntil) return 'open'
    return this.#flight === undefined ? 'half-open' : 'probing'
  }

  /** The eager construction mint: caches a token, emits nothing (SPEC.md 5.5). Throws on failure. */
  async prime(signal: AbortSignal = new AbortController().signal): Promise<void> {
    const minted = await this.#mint(signal)
    this.#cached = this.#cache(minted)
  }

  /** A token to send now; throws CREDENTIAL_BREAKER_OPEN or CREDENTIAL_MINT_FAILED, or the signal's reason. */
  async token(signal?: AbortSignal): Promise<BearerToken> {
    const now = this.#clock.now()
    const cached = this.#cached
    const valid = cached !== undefined && (cached.expiresAt === undefined || now < cached.expiresAt)
    if (valid && (cached.refreshAt === undefined || now < cached.refreshAt)) return cached.token
    if (this.#openUntil !== undefined) {
      // Open, or a probe already running: a valid token still serves; otherwise refuse at once.
      if (now < this.#openUntil || this.#flight !== undefined) {
        if (valid) return cached.token
        throw new ServiceError('CREDENTIAL_BREAKER_OPEN', {
          retryAfter: Math.max(1, Math.ceil(((this.#openUntil > now ? this.#openUntil : now + COOLDOWN_MS) - now) / 1000)),
          data: { provider: this.label },
        })
      }
    }
    try {
      return (await this.#join(signal)).token
    } catch (error) {
      if (signal?.aborted === true) throw signal.reason
      if (valid) return cached.token
      throw error
    }
  }

  #join(signal: AbortSignal | undefined): Promise<Cached> {
    const flight = this.#flight ?? this.#start()
    flight.waiters++
    if (signal === undefined) return flight.promise
    return new Promise<Cached>((resolve, reject) => {
      const leave = (): void => {
        flight.waiters--
        // The last waiter gone: nobody needs this mint; cancelling it releases a probe.
        if (flight.waiters === 0) flight.controller.abort(signal.reason)
        reject(signal.reason)
      }
      if (signal.aborted) {
        leave()
        return
      }
      signal.addEventListener('abort', leave, { once: true })
      flight.promise.then(
        (value) => { signal.removeEventListener('abort', leave); resolve(value) },
        (error: unknown) => { signal.removeEventListener('abort', leave); reject(error) },
      )
    })
  }

  #start(): Flight {
    const controller = new AbortController()
    const probing = this.#openUntil !== undefined
    const promise = (async () => {
      try {
        // Raced with the cancellation, so a mint that ignores its signal still releases the probe at once.
        const minted = await Promise.race([this.#mint(controller.signal), rejectOnAbort(controller.signal)])
        const cached = this.#cache(minted)
        this.#cached = cached
        this.#failures = 0
        this.#openUntil = undefined
        this.#counters.refreshed(this.label, 'success')
        if (cached.expiresAt !== undefined) this.#counters.observeExpiry(this.label, this, cached.expiresAt)
        return cached
      } catch (error) {
        // Cancelled: no completed attempt, nothing emitted; a probe is released (the state stays half-open).
        if (controller.signal.aborted) throw controller.signal.reason
        this.#failures++
        this.#counters.refreshed(this.label, 'failure')
        if (probing || this.#failures >= FAILURE_THRESHOLD) this.#openUntil = this.#clock.now() + COOLDOWN_MS
        throw new ServiceError('CREDENTIAL_MINT_FAILED', { cause: error, data: { provider: this.label, failures: this.#failures } })
      } finally {
        this.#flight = undefined
      }
    })()
    promise.catch(() => {})
    const flight: Flight = { promise, controller, waiters: 0 }
    this.#flight = flight
    return flight
  }

  #cache(minted: MintedCredential): Cached {
    const { token, expiresAt } = minted
    if (expiresAt === undefined) return { token, expiresAt: undefined, refreshAt: undefined }
    const lifetime = expiresAt - this.#clock.now()
    const margin = Math.min(REFRESH_MARGIN_MS, Math.max(0, lifetime / 2))
    return { token, expiresAt, refreshAt: expiresAt - margin }
  }
}

function rejectOnAbort(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    signal.addEventListener('abort', () => reject(signal.reason), { once: true })
  })
}
