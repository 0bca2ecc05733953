/**
 * SPEC.md 8.1's table, "Memory admission": what the gate is charged for each
 * piece of work, in one frozen object that every charge reads (the gate's
 * entry step, the packument and `py` listing reads and responses, the mirror
 * worker's document reads). test/memory/admission-charges.test.ts pins it to
 * SPEC.md's figures.
 *
 * It lives beside the gate rather than with the listings that charge most
 * of it: the entry step is the gate's own and the memory plan reads it, and
 * the memory layer imports nothing above it.
 *
 * Rows of SPEC.md 8.1 that charge nothing (a selected read beyond its entry
 * step, an assembled hit or 304's response, a request joining another's
 * work, a trusted private artifact hit, the artifact relay) have no figure
 * here: nothing is charged for them anywhere.
 */
import type { Ecosystem } from '../advisory/artifact/database.js'

export interface AdmissionCharges {
  /** Entering, before a CPU slot is taken: one step of this many bytes. */
  readonly entryStepBytes: number
  /** A listing's full metadata read: bytes per decompressed source byte, chunk by chunk before parsing. */
  readonly sourcePerByte: Readonly<Record<Ecosystem, number>>
  /** A listing's response: bytes per byte of its output basis, before assembly. */
  readonly responsePerBasisByte: Readonly<Record<Ecosystem, number>>
}

export const ADMISSION_CHARGES: AdmissionCharges = Object.freeze({
  entryStepBytes: 1024 * 1024,
  sourcePerByte: Object.freeze({ js: 1.1, py: 3.2 }),
  responsePerBasisByte: Object.freeze({ js: 2.0, py: 1.6 }),
})
