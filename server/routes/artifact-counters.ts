/**
 * Counters of the artifact route (SPEC.md 4.4 public leg 5-6): relays by leg
 * and outcome, anomalous relays by reason, mirror jobs enqueued and enqueue
 * failures. Telemetry reads `snapshot()`; nothing here exports anything.
 */
export const ARTIFACT_LEGS = ['private', 'public'] as const
export type ArtifactLeg = (typeof ARTIFACT_LEGS)[number]

export const ARTIFACT_OUTCOMES = [
  /** Bytes relayed to the last one. */
  'delivered',
  /** A bodiless answer relayed: HEAD, 304, 204. */
  'bodiless',
  /** The client went away mid-relay. */
  'client_gone',
  /** The upstream failed after the first byte: the connection was cut. */
  'cut',
  /** The upstream failed before the first byte, or never answered: the serve error model answered. */
  'failed',
  /** Refused before any upstream artifact request: policy, integrity floor, tarball host, egress. */
  'refused',
  /** Private leg: a clean miss that fell through. Public leg: a forwarded miss or mapped non-success. */
  'miss',
] as const
export type ArtifactOutcome = (typeof ARTIFACT_OUTCOMES)[number]

/** Why a relay was anomalous: a passed-through non-success, or a success visibly not an artifact. */
export type AnomalyReason = 'status' | 'content_type'

export interface ArtifactCountersSnapshot {
  readonly relays: Readonly<Record<ArtifactLeg, Readonly<Record<ArtifactOutcome, number>>>>
  readonly anomalous: Readonly<Record<AnomalyReason, number>>
  readonly enqueued: number
  readonly enqueueFailures: number
}

function zeroOutcomes(): Record<ArtifactOutcome, number> {
  return Object.fromEntries(ARTIFACT_OUTCOMES.map((o) => [o, 0])) as Record<ArtifactOutcome, number>
}

export class ArtifactCounters {
  readonly #relays: Record<ArtifactLeg, Record<ArtifactOutcome, number>> = { private: zeroOutcomes(), public: zeroOutcomes() }
  readonly #anomalous: Record<AnomalyReason, number> = { status: 0, content_type: 0 }
  #enqueued = 0
  #enqueueFailures = 0

  relay(leg: ArtifactLeg, outcome: ArtifactOutcome): void {
    this.#relays[leg][outcome] += 1
  }

  anomalous(reason: AnomalyReason): void {
    this.#anomalous[reason] += 1
  }

  enqueued(): void {
    this.#enqueued += 1
  }

  enqueueFailed(): void {
    this.#enqueueFailures += 1
  }

  snapshot(): ArtifactCountersSnapshot {
    return {
      relays: { private: { ...this.#relays.private }, public: { ...this.#relays.public } },
      anomalous: { ...this.#anomalous },
      enqueued: this.#enqueued,
      enqueueFailures: this.#enqueueFailures,
    }
  }
}
