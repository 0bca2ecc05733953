/**
 * The status of a listing nothing survived (SPEC.md 4.2: "the status follows
 * the most recoverable cause"), from the failures of both upstream legs and
 * of the render together: a transient upstream or advisory condition (503)
 * beats a policy withholding (403), which beats a permanent inability (500),
 * which beats an upstream that answered for another package (502), which
 * beats a forwarded miss (404).
 */
import type { ServiceError } from '../errors.js'

/** Larger is more recoverable. */
function recoverability(error: ServiceError): number {
  if (error.status === 503) return 5
  if (error.code === 'POLICY_WITHHELD') return 4
  if (error.status === 500) return 3
  if (error.code === 'UPSTREAM_WRONG_PACKAGE') return 2
  if (error.status === 404) return 1
  return 0
}

export function mostRecoverable(errors: readonly ServiceError[]): ServiceError | undefined {
  let best: ServiceError | undefined
  for (const error of errors) if (best === undefined || recoverability(error) > recoverability(best)) best = error
  return best
}
