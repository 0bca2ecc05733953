/**
 * The Piscina task module of one packument: scan both documents, merge and
 * gate, charge the output basis through the task's port, render, and move
 * the body back. A thin wrapper over engine/packument (DESIGN.md: workers/
 * holds task modules only).
 *
 * Piscina loads worker files as JavaScript: the pool is built from
 * `new URL('./packument-task.js', import.meta.url)` of the compiled module,
 * dist/workers/packument-task.js (`npm run build`). Tests run the sources
 * under tap, whose TypeScript loader the worker threads inherit through
 * execArgv, so there the file URL of workers/packument-task.ts works as is.
 */
import { responseChargeBytes } from '../engine/listing/output-basis.js'
import type { PackumentIndex } from '../engine/packument/packument-index.js'
import type { FactNeeds } from '../engine/policy/decision.js'
import { basisOf, indexDocument, planPackument, renderPlan, upstreamDerivedEtag } from '../engine/packument/pipeline.js'
import type { PackumentTaskInput, PackumentTaskResult } from './packument-messages.js'
import { move, MovableMessage } from './packument-messages.js'
import { charge, loadGate, serialize } from './task-common.js'
import { reportHeap, startHeapReport } from './heap-report.js'

// The budget sampler follows this thread's heap (engine/memory/thread-heaps.ts).
startHeapReport()

function index(chunks: ArrayBuffer[] | undefined, task: PackumentTaskInput, needs?: FactNeeds): PackumentIndex | undefined {
  if (chunks === undefined) return undefined
  return indexDocument(chunks.map((buffer) => new Uint8Array(buffer)), task.abbreviated, task.limits, needs)
}

export default async function packumentTask(task: PackumentTaskInput): Promise<MovableMessage<PackumentTaskResult>> {
  try {
    const decide = (await loadGate(task.gate.module))(task.gate.options, task.now)
    const privateIndex = index(task.privateChunks, task)
    // Only the public document is gated: only it records what the history rules read.
    const publicIndex = index(task.publicChunks, task, decide.needs)
    const plan = planPackument({ ...task, decide }, privateIndex, publicIndex)
    const basisBytes = basisOf(privateIndex, publicIndex)
    if (plan.withholding === undefined) await charge(task.port, responseChargeBytes(basisBytes, task.ecosystem), basisBytes)
    const outcome = renderPlan(plan, task.abbreviated, basisBytes, upstreamDerivedEtag(plan, task, privateIndex, publicIndex))
    // render allocates the body as its own SharedArrayBuffer: it crosses without a copy (shared, so not in the transfer list).
    const body = outcome.body?.buffer as SharedArrayBuffer | undefined
    const result: PackumentTaskResult = {
      ok: true,
      body,
      etag: outcome.etag,
      counts: outcome.counts,
      selected: outcome.selected,
      observations: outcome.observations,
      dropped: outcome.dropped,
      advisoryAnswered: outcome.advisoryAnswered,
      withholding: outcome.withholding,
      basisBytes,
      regateAt: outcome.regateAt,
      notice: outcome.notice,
    }
    return move(new MovableMessage(result, []))
  } catch (error) {
    return move(new MovableMessage<PackumentTaskResult>({ ok: false, error: serialize(error) }, []))
  } finally {
    task.port.close()
    reportHeap()
  }
}

// The pool's second task (piscina `name: 'compressTask'`): one pool, one sizing.
export { compressTask } from './compress-task.js'
// The third (`name: 'pyPageTask'`): a `py` project page (issue 16).
export { pyPageTask } from './py-page-task.js'
