/**
 * A listing's response charge, taken before the pool gets the render
 * (SPEC.md 8.1: "per byte of its output basis, before assembly").
 *
 * The exact output basis is known only inside the pool task, after the
 * scan; the task used to ask for its charge from there and wait inside its
 * thread while the gate paused it. Such a waiting task keeps its scanned
 * documents on that thread's heap, and under a flood a few of them left the
 * render of the request holding the overshoot right (the one whose end frees
 * the memory they wait for) stalled on the same thread until their pauses
 * timed out, 60 s later (issue 18: the flood bench's requests that failed at
 * the 50 s read cap). So the charge is taken first, on the main thread, at an
 * upper bound: the output basis never exceeds the two documents together
 * (each estimate adds at most the whole other document). A render that must
 * wait for memory waits here, holding no pool task; the task's exact charge
 * then settles against the prepaid bytes and the rest returns at once.
 */
import type { Admission, ChargeOptions } from '../memory/gate.js'

const RESOLVED: Promise<void> = Promise.resolve()

export class PrepaidCharge {
  readonly #admission: Admission
  readonly #options: ChargeOptions
  #unsettled: number

  private constructor(admission: Admission, bytes: number, options: ChargeOptions) {
    this.#admission = admission
    this.#options = options
    this.#unsettled = bytes
  }

  /** Charges `boundBytes` (pausing like any charge) and returns the prepayment to settle the exact charge against. */
  static async take(admission: Admission, boundBytes: number, options: ChargeOptions): Promise<PrepaidCharge> {
    const bytes = Math.max(0, Math.ceil(boundBytes))
    await admission.charge(bytes, options)
    return new PrepaidCharge(admission, bytes, options)
  }

  /** The exact charge: covered by the prepayment, whose unused part returns now; any excess is charged as usual. */
  charge(bytes: number): Promise<void> {
    const covered = Math.min(bytes, this.#unsettled)
    const unused = this.#unsettled - covered
    this.#unsettled = 0
    if (unused > 0) this.#admission.refund(unused)
    return bytes > covered ? this.#admission.charge(bytes - covered, this.#options) : RESOLVED
  }

  /** Returns what no exact charge claimed (a withheld listing is never charged a response). */
  settle(): void {
    if (this.#unsettled > 0) this.#admission.refund(this.#unsettled)
    this.#unsettled = 0
  }
}

/**
 * Runs a listing's render with its response prepaid at `boundBytes`: `run`
 * gets the charge function to hand the pool task, and whatever the task does
 * not claim returns when it ends.
 */
export async function withPrepaidResponse<T>(admission: Admission, boundBytes: number, options: ChargeOptions, run: (charge: (bytes: number) => Promise<void>) => Promise<T>): Promise<T> {
  const prepaid = await PrepaidCharge.take(admission, boundBytes, options)
  try {
    return await run((bytes) => prepaid.charge(bytes))
  } finally {
    prepaid.settle()
  }
}

/** The decompressed bytes of the upstream documents' chunks, an absent document counting none. */
export function chunkBytes(...documents: readonly (readonly Uint8Array[] | undefined)[]): number {
  let total = 0
  for (const chunks of documents) for (const chunk of chunks ?? []) total += chunk.byteLength
  return total
}
