/**
 * One consumer, several mounts (issue 16): the consumer's JobRunner that
 * hands each job to the worker of the mount it names (`js` when it names
 * none, mirror-job.ts). The loop, the visibility renewal, the receive
 * budget, the counters and the settle rules stay the consumer's, whatever
 * the mount.
 *
 * Its capacity is the sum of its workers' (each target's pace,
 * target-pace.ts), so one target's slowness or outage does not stop the
 * other's jobs from being received; the consumer's concurrency still bounds
 * the whole.
 *
 * A job for a mount this process has no mirror target for (a dedicated
 * worker configured for `js` alone that receives a `py` job) cannot succeed
 * here: it is left to its window, counted `publish_refused` and logged
 * once per delivery, so the redrive policy captures it rather than a worker
 * dropping it.
 */
import type { Logger } from '../log/logger.js'
import type { JobRunner } from './mirror-consumer.js'
import { mountOf, type MirrorJob, type MirrorJobMount } from './mirror-job.js'
import { MIRROR_JOB_REFUSED, type MirrorOutcome } from './job-outcomes.js'

export class MirrorDispatch implements JobRunner {
  readonly #runners: Partial<Record<MirrorJobMount, JobRunner>>
  readonly #logger: Logger

  constructor(runners: Partial<Record<MirrorJobMount, JobRunner>>, logger: Logger) {
    if (Object.values(runners).every((r) => r === undefined)) throw new TypeError('a mirror dispatch needs the worker of at least one mount')
    this.#runners = runners
    this.#logger = logger
  }

  /** The mounts this process mirrors. */
  get mounts(): MirrorJobMount[] {
    return (Object.keys(this.#runners) as MirrorJobMount[]).filter((m) => this.#runners[m] !== undefined)
  }

  capacity(): number {
    let sum = 0
    for (const runner of Object.values(this.#runners)) sum += runner?.capacity?.() ?? Number.POSITIVE_INFINITY
    return sum
  }

  onCapacity(listener: () => void): void {
    for (const runner of Object.values(this.#runners)) runner?.onCapacity?.(listener)
  }

  async process(job: MirrorJob, signal: AbortSignal): Promise<MirrorOutcome> {
    const mount = mountOf(job)
    const runner = this.#runners[mount]
    if (runner !== undefined) return runner.process(job, signal)
    const reason = `this worker has no mirror target for mount ${mount} (mounts.${mount}.mirror)`
    this.#logger.warn(MIRROR_JOB_REFUSED, { mount, package: job.package, version: job.version, filename: job.filename, result: 'publish_refused', reason })
    return { result: 'publish_refused', disposition: 'leave', reason }
  }
}
