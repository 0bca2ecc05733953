/**
 * The pool side of the `py` project page task: moves the pages' chunks to a
 * worker, answers its charge request through the memory gate, and turns the
 * result back into a PyPageOutcome or a ServiceError.
 */
import type { Piscina } from 'piscina'
import type { PageFormat } from '../engine/pypi/content-negotiation.js'
import type { ReadLimits } from '../engine/pypi/simple-model.js'
import type { GateModule } from './packument-messages.js'
import { move, MovableMessage } from './packument-messages.js'
import { chargeChannel, poolFailure, revived, transferable } from './packument-client.js'
import type { PyPageOutcome, PyPageTaskInput, PyPageTaskResult, PyTaskPage } from './py-page-task.js'

export interface FetchedPage {
  /** Moved to the worker: the caller must not touch them afterwards. */
  readonly chunks: readonly Uint8Array[]
  readonly contentType: string | undefined
  readonly url: string
}

export interface PyPageJob {
  readonly project: string
  readonly baseUrl: string
  readonly format: PageFormat
  readonly now: number
  readonly privatePage: FetchedPage | undefined
  readonly publicPage: FetchedPage | undefined
  readonly privateHidesPublic: boolean
  readonly limits: ReadLimits
  readonly gate: GateModule
  readonly charge: (bytes: number, basisBytes: number) => Promise<void>
  readonly signal?: AbortSignal
}

function taskPage(page: FetchedPage | undefined): PyTaskPage | undefined {
  return page === undefined ? undefined : { chunks: page.chunks.map(transferable), contentType: page.contentType, url: page.url }
}

export async function runPyPageTask(pool: Piscina, job: PyPageJob): Promise<PyPageOutcome> {
  const privatePage = taskPage(job.privatePage)
  const publicPage = taskPage(job.publicPage)
  const { port1, port2 } = chargeChannel(job.charge)
  const input: PyPageTaskInput = {
    project: job.project,
    baseUrl: job.baseUrl,
    format: job.format,
    now: job.now,
    privatePage,
    publicPage,
    privateHidesPublic: job.privateHidesPublic,
    limits: job.limits,
    gate: job.gate,
    port: port2,
  }
  const transfer = [...(privatePage?.chunks ?? []), ...(publicPage?.chunks ?? []), port2]
  let result: PyPageTaskResult
  try {
    result = await pool.run(move(new MovableMessage(input, transfer)), { name: 'pyPageTask', ...(job.signal === undefined ? {} : { signal: job.signal }) }) as PyPageTaskResult
  } catch (error) {
    throw poolFailure(error)
  } finally {
    port1.close()
  }
  if (!result.ok) throw revived(result.error)
  const { ok: _ok, body, ...rest } = result
  return { ...rest, body: body === undefined ? undefined : new Uint8Array(body) }
}
