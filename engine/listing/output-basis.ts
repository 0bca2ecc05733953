/**
 * SPEC.md 8.1: a listing's response is charged per byte of its output basis,
 * before assembly. "The output basis is the larger of two estimates: one from
 * the largest merged document, one from the base document (the private
 * document when there is one). Each adds the other document's size in
 * proportion to the versions the starting document lacks."
 */

import type { Ecosystem } from '../advisory/artifact/database.js'
import { ADMISSION_CHARGES } from '../memory/admission-charges.js'

/** Bytes to charge for a listing's response (SPEC.md 8.1, per byte of output basis). */
export function responseChargeBytes(basisBytes: number, ecosystem: Ecosystem = 'js'): number {
  return Math.ceil(basisBytes * ADMISSION_CHARGES.responsePerBasisByte[ecosystem])
}

export interface BasisDocument {
  /** Size of the upstream document, bytes. */
  readonly bytes: number
  /** Its version count. */
  readonly versions: number
  /**
   * How many of the other document's versions this one lacks. When only the
   * counts are known, `Math.max(0, other.versions - versions)`.
   */
  readonly lacks: number
}

function estimateFrom(start: BasisDocument, other: BasisDocument | undefined): number {
  if (other === undefined || other.versions <= 0) return start.bytes
  const share = Math.min(start.lacks, other.versions) / other.versions
  return start.bytes + other.bytes * share
}

/** The output basis, bytes (rounded up), of merging a private and a public document; either may be absent. */
export function outputBasisBytes(privateDocument: BasisDocument | undefined, publicDocument: BasisDocument | undefined): number {
  if (privateDocument === undefined && publicDocument === undefined) return 0
  const base = privateDocument ?? publicDocument!
  const baseOther = privateDocument === undefined ? undefined : publicDocument
  let largest = base
  let largestOther = baseOther
  if (privateDocument !== undefined && publicDocument !== undefined && publicDocument.bytes > privateDocument.bytes) {
    largest = publicDocument
    largestOther = privateDocument
  }
  return Math.ceil(Math.max(estimateFrom(largest, largestOther), estimateFrom(base, baseOther)))
}
