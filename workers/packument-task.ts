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
import { isServiceError, ServiceError } from '../engine/errors.js'
import type { PackumentIndex } from '../engine/packument/packument-index.js'
import { basisOf, indexDocument, planPackument, renderPlan, responseChargeBytes, upstreamDerivedEtag } from '../engine/packument/pipeline.js'
import type { ChargeReply, ChargeRequest, GateFactory, PackumentTaskInput, PackumentTaskResult, SerializedError } from './packument-messages.js'
import { move, MovableMessage } from './packument-messages.js'
import { reportHeap, startHeapReport } from './heap-report.js'

// The budget sampler follows this thread's heap (engine/memory/thread-heaps.ts).
startHeapReport()

/** Gate modules already imported by this thread, by URL. */
const gateModules = new Map<string, Promise<GateFactory>>()

function loadGate(url: string): Promise<GateFactory> {
  let factory = gateModules.get(url)
  if (factory === undefined) {
    factory = import(url).then((module: { createDecide?: unknown }) => {
      if (typeof module.createDecide !== 'function') {
        throw new ServiceError('INTERNAL', { message: 'the gate module exports no createDecide function' })
      }
      return module.createDecide as GateFactory
    })
    gateModules.set(url, factory)
  }
  return factory
}

function index(chunks: ArrayBuffer[] | undefined, task: PackumentTaskInput): PackumentIndex | undefined {
  if (chunks === undefined) return undefined
  return indexDocument(chunks.map((buffer) => new Uint8Array(buffer)), task.abbreviated, task.limits)
}

/** Asks the main thread for the charge and waits for its answer. */
function charge(task: PackumentTaskInput, basisBytes: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    task.port.once('message', (reply: ChargeReply) => {
      if (reply.type === 'granted') resolve()
      else reject(new ServiceError(reply.code))
    })
    const request: ChargeRequest = { type: 'charge', bytes: responseChargeBytes(basisBytes, task.ecosystem), basisBytes }
    task.port.postMessage(request)
  })
}

function serialize(error: unknown): SerializedError {
  const e = isServiceError(error) ? error : new ServiceError('INTERNAL', { cause: error })
  return { code: e.code, message: e.message, data: e.data, retryAfter: e.retryAfter }
}

export default async function packumentTask(task: PackumentTaskInput): Promise<MovableMessage<PackumentTaskResult>> {
  try {
    const decide = (await loadGate(task.gate.module))(task.gate.options, task.now)
    const privateIndex = index(task.privateChunks, task)
    const publicIndex = index(task.publicChunks, task)
    const plan = planPackument({ ...task, decide }, privateIndex, publicIndex)
    const basisBytes = basisOf(privateIndex, publicIndex)
    if (plan.withholding === undefined) await charge(task, basisBytes)
    const outcome = renderPlan(plan, task.abbreviated, basisBytes, upstreamDerivedEtag(plan, task, privateIndex, publicIndex))
    // render allocates the body as its own ArrayBuffer, so it moves without a copy.
    const body = outcome.body?.buffer as ArrayBuffer | undefined
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
    }
    return move(new MovableMessage(result, body === undefined ? [] : [body]))
  } catch (error) {
    return move(new MovableMessage<PackumentTaskResult>({ ok: false, error: serialize(error) }, []))
  } finally {
    task.port.close()
    reportHeap()
  }
}

// The pool's second task (piscina `name: 'compressTask'`): one pool, one sizing.
export { compressTask } from './compress-task.js'
