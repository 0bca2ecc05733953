/**
 * The pool task of one `py` project page (issue 16; piscina `name:
 * 'pyPageTask'`): read both upstream pages, merge and gate, charge the
 * output's share through the task's port, render the negotiated format and
 * move the body back. A thin wrapper over engine/pypi/project-page.ts.
 */
import type { MessagePort } from 'node:worker_threads'
import { ServiceError } from '../engine/errors.js'
import { responseChargeBytes } from '../engine/listing/output-basis.js'
import type { PageFormat } from '../engine/pypi/content-negotiation.js'
import { planProjectPage, renderProjectPage, type ProjectPagePlan } from '../engine/pypi/project-page.js'
import type { ReadLimits } from '../engine/pypi/simple-model.js'
import { reportHeap } from './heap-report.js'
import type { GateModule, SerializedError } from './packument-messages.js'
import { move, MovableMessage } from './packument-messages.js'
import { charge, loadGate, serialize } from './task-common.js'

export interface PyTaskPage {
  /** The page's decompressed chunks in order; transferred. */
  readonly chunks: ArrayBuffer[]
  readonly contentType: string | undefined
  readonly url: string
}

export interface PyPageTaskInput {
  readonly project: string
  readonly baseUrl: string
  readonly format: PageFormat
  readonly now: number
  readonly privatePage: PyTaskPage | undefined
  readonly publicPage: PyTaskPage | undefined
  readonly privateHidesPublic: boolean
  readonly limits: ReadLimits
  readonly gate: GateModule
  readonly port: MessagePort
}

/** The plan's findings the main thread needs, with the rendered page. */
export type PyPageOutcome = Omit<ProjectPagePlan, 'project' | 'gated' | 'basisBytes'> & {
  /** Undefined when nothing is offered and `withholding` says why. */
  readonly body: Uint8Array | undefined
  readonly etag: string | undefined
}

export type PyPageTaskResult =
  | ({ readonly ok: true; readonly body: ArrayBuffer | undefined } & Omit<PyPageOutcome, 'body'>)
  | { readonly ok: false; readonly error: SerializedError }

function joined(page: PyTaskPage | undefined): { body: Uint8Array, contentType: string | undefined, url: string } | undefined {
  if (page === undefined) return undefined
  const body = page.chunks.length === 1 ? new Uint8Array(page.chunks[0] as ArrayBuffer) : Buffer.concat(page.chunks.map((c) => new Uint8Array(c)))
  return { body, contentType: page.contentType, url: page.url }
}

export async function pyPageTask(task: PyPageTaskInput): Promise<MovableMessage<PyPageTaskResult>> {
  try {
    const decide = (await loadGate(task.gate.module))(task.gate.options, task.now)
    const plan = planProjectPage({
      project: task.project,
      privatePage: joined(task.privatePage),
      publicPage: joined(task.publicPage),
      privateHidesPublic: task.privateHidesPublic,
      limits: task.limits,
      decide,
    })
    // Both upstreams answered, and neither page is this project's (the readers throw on another name): a miss.
    if (plan === undefined) throw new ServiceError('UPSTREAM_MISS')
    let rendered: { body: Uint8Array, etag: string } | undefined
    if (plan.withholding === undefined) {
      await charge(task.port, responseChargeBytes(plan.basisBytes, 'py'), plan.basisBytes)
      rendered = renderProjectPage(plan, task.format, task.baseUrl)
    }
    const body = rendered?.body.buffer as ArrayBuffer | undefined
    const result: PyPageTaskResult = {
      ok: true,
      body,
      etag: rendered?.etag,
      files: plan.files,
      counts: plan.counts,
      mismatches: plan.mismatches,
      observations: plan.observations,
      advisoryAnswered: plan.advisoryAnswered,
      withholding: plan.withholding,
      projectQuarantined: plan.projectQuarantined,
      regateAt: plan.regateAt,
    }
    return move(new MovableMessage(result, body === undefined ? [] : [body]))
  } catch (error) {
    return move(new MovableMessage<PyPageTaskResult>({ ok: false, error: serialize(error) }, []))
  } finally {
    task.port.close()
    reportHeap()
  }
}
