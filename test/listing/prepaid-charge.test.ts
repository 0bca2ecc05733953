/**
 * A listing's response charge is taken before the pool gets the render, at
 * its upper bound (engine/listing/prepaid-charge.ts): a render that must wait
 * for memory waits on the main thread, holding no pool task, and the task's
 * exact charge settles at once against the prepaid bytes.
 */
import t from 'tap'
import { AdmissionGate, type Admission } from '../../engine/memory/gate.js'
import { PrepaidCharge, withPrepaidResponse, chunkBytes } from '../../engine/listing/prepaid-charge.js'
import { MetadataCache } from '../../engine/cache/metadata-cache.js'
import { PackumentService, type RenderJob, type SelectedArtifact } from '../../engine/packument/packument-service.js'
import type { PackumentOutcome } from '../../engine/packument/pipeline.js'
import type { UpstreamClient } from '../../engine/upstream/upstream-client.js'
import { isServiceError } from '../../engine/errors.js'
import { ManualClock } from '../doubles/manual-clock.js'
import { ManualTimers } from '../doubles/manual-timers.js'

const MiB = 1024 * 1024
const RENDER = { timeoutMs: 60_000 }
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

function gate(budgetMiB = 16): AdmissionGate {
  return new AdmissionGate({ budgetBytes: budgetMiB * MiB, maxInFlight: 4, waitingRoom: 4, timers: new ManualTimers() })
}

t.test('the exact charge settles against the prepayment; the unused part returns at once', async (t) => {
  const g = gate()
  const a = await g.enter()
  const prepaid = await PrepaidCharge.take(a, 6 * MiB, RENDER)
  t.equal(a.chargedBytes, 7 * MiB, 'entry step and the bound')
  await prepaid.charge(2 * MiB)
  t.equal(a.chargedBytes, 3 * MiB, 'the bound less the exact charge returned')
  prepaid.settle()
  t.equal(a.chargedBytes, 3 * MiB, 'settling after the exact charge returns nothing more')
  a.release()
  t.equal(g.chargedBytes, 0)
})

t.test('an exact charge above the bound charges the excess as usual', async (t) => {
  const g = gate()
  const a = await g.enter()
  const prepaid = await PrepaidCharge.take(a, 2 * MiB, RENDER)
  await prepaid.charge(5 * MiB)
  t.equal(a.chargedBytes, 6 * MiB)
  a.release()
})

t.test('a render that never charges (a withheld listing) returns the whole prepayment', async (t) => {
  const g = gate()
  const a = await g.enter()
  const result = await withPrepaidResponse(a, 4 * MiB, RENDER, async () => {
    t.equal(a.chargedBytes, 5 * MiB, 'prepaid while the render runs')
    return 'withheld'
  })
  t.equal(result, 'withheld')
  t.equal(a.chargedBytes, MiB, 'only the entry step is left')
  a.release()
})

t.test('a refund never returns the entry step, resumes paused charges, and does nothing after release', async (t) => {
  const g = gate(8)
  const a = await g.enter()
  const b = await g.enter()
  await a.charge(6 * MiB, RENDER)
  t.equal(a.tryCharge(MiB), true, 'a takes the overshoot right')
  let resumed = false
  void b.charge(2 * MiB, RENDER).then(() => { resumed = true })
  await flush()
  t.equal(resumed, false)
  a.refund(100 * MiB)
  t.equal(a.chargedBytes, MiB, 'back to its entry step')
  await flush()
  t.equal(resumed, true, 'the refund resumed the paused charge')
  a.release()
  a.refund(MiB)
  t.equal(a.chargedBytes, 0)
  b.release()
  t.equal(g.chargedBytes, 0)
})

t.test('chunkBytes counts every chunk of every present document', async (t) => {
  t.equal(chunkBytes([new Uint8Array(3), new Uint8Array(4)], undefined, [new Uint8Array(5)]), 12)
  t.equal(chunkBytes(undefined), 0)
})

/** An upstream that answers every document read with one chunk of `bytes`. */
function upstream(bytes: number): UpstreamClient {
  return {
    fetchDocument: async () => ({ kind: 'document', chunks: [new Uint8Array(bytes)], etag: '"u"' }),
  } as unknown as UpstreamClient
}

function service(render: (job: RenderJob) => Promise<PackumentOutcome>): PackumentService {
  const clock = new ManualClock()
  return new PackumentService({
    ecosystem: 'js',
    privateClient: upstream(MiB / 2),
    publicClient: upstream(MiB / 2),
    cache: new MetadataCache<SelectedArtifact>({ maxBytes: 1_000_000, maxEntries: 100, clock, selectedVersionSize: () => 1 }),
    clock,
    generation: () => 1,
    observe: () => {},
    render,
  })
}

const outcome = (withholding?: unknown): PackumentOutcome => ({
  body: withholding === undefined ? new Uint8Array(3) : undefined,
  etag: withholding === undefined ? '"r"' : undefined,
  selected: [], observations: [], dropped: [], advisoryAnswered: [], withholding, basisBytes: 0,
}) as unknown as PackumentOutcome

t.test('the pool gets the render only once its response bound is charged; the task\'s charge is granted at once', async (t) => {
  const g = gate(16)
  const admission = await g.enter()
  // Another request fills the budget and holds the overshoot right, so the listing's response must wait.
  const blocker = await g.enter()
  t.ok(blocker.tryCharge(14 * MiB))
  t.ok(blocker.tryCharge(4 * MiB), 'the blocker runs past the budget')
  let rendered = false
  let taskCharge: 'pending' | 'granted' = 'pending'
  const svc = service(async (job) => {
    rendered = true
    // The exact basis of two half-MiB documents that overlap: under the bound of 2.0 x 1 MiB.
    const granted = job.charge(MiB)
    void granted.then(() => { taskCharge = 'granted' })
    await granted
    return outcome()
  })
  const served = svc.assemble({ packageName: 'left-pad', abbreviated: false, admission, signal: new AbortController().signal })
  for (let i = 0; i < 5; i++) await flush()
  t.equal(rendered, false, 'the render waits for memory before the pool, not inside it')
  t.equal(admission.chargedBytes, MiB, 'nothing charged while paused')
  blocker.release()
  const answer = await served
  t.equal(answer.etag, '"r"')
  t.equal(taskCharge, 'granted')
  t.equal(admission.chargedBytes, 2 * MiB, 'entry step plus the exact response charge; the rest of the bound returned')
  admission.release()
  t.equal(g.chargedBytes, 0)
})

t.test('a withheld listing keeps no response charge', async (t) => {
  const g = gate(16)
  const admission: Admission = await g.enter()
  const svc = service(async () => outcome({ code: 'POLICY_WITHHELD' }))
  const error = await svc.assemble({ packageName: 'left-pad', abbreviated: false, admission, signal: new AbortController().signal }).then(() => undefined, (e: unknown) => e)
  t.ok(isServiceError(error, 'POLICY_WITHHELD'), 'refused as withheld')
  t.equal(admission.chargedBytes, MiB)
  admission.release()
})
