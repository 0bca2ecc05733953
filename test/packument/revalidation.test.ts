/**
 * Issue 17 item 2: a retained packument answer is revalidated with the
 * upstreams' validators instead of read again; an upstream 304 costs no read
 * and no parse (counted); within `maxStaleMs` past its freshness it is served
 * while one revalidation runs behind it, never past that bound; and it is
 * gated again when a quarantine ends under it, when the advisory database
 * generation moves, and when the rules change.
 *
 * Real UpstreamClients against two small HTTP upstreams on 127.0.0.1 that
 * answer `If-None-Match` with 304, and the real scan, merge, gate and render
 * run in this thread (the pool task does the same work in a worker), with a
 * manual clock.
 */
import t, { type Test } from 'tap'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { MetadataCache, REVALIDATED_RETENTION_MS } from '../../engine/cache/metadata-cache.js'
import { AdmissionGate, type Admission } from '../../engine/memory/gate.js'
import { PackumentService, type RenderJob, type SelectedArtifact } from '../../engine/packument/packument-service.js'
import { indexDocument, mergeAndRender, type PackumentOutcome } from '../../engine/packument/pipeline.js'
import type { Decide } from '../../engine/packument/merge.js'
import { createEvaluator } from '../../engine/policy/evaluator.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import { UpstreamClient } from '../../engine/upstream/upstream-client.js'
import { UpstreamFetchCounters } from '../../engine/upstream/fetch-counters.js'
import { ManualClock } from '../doubles/manual-clock.js'
import { RecordingLogger } from '../doubles/recording-logger.js'

const DAY = 86_400_000
const MINUTE = 60_000

/** A registry of one document per package, with a strong ETag that moves when the document changes. */
interface FakeUpstream {
  readonly url: string
  set(name: string, document: object): void
  /** Full answers (200) and 304s so far. */
  readonly served: { full: number; notModified: number; conditional: number }
  /** While set, every request waits for it. */
  hold: Promise<void> | undefined
}

async function fakeUpstream(t: Test): Promise<FakeUpstream> {
  const documents = new Map<string, { body: string; etag: string }>()
  let revision = 0
  const upstream: FakeUpstream = {
    url: '',
    set(name, document) { documents.set(name, { body: JSON.stringify(document), etag: `"r${++revision}"` }) },
    served: { full: 0, notModified: 0, conditional: 0 },
    hold: undefined,
  }
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      if (upstream.hold !== undefined) await upstream.hold
      const name = decodeURIComponent((req.url ?? '/').slice(1))
      const doc = documents.get(name)
      if (doc === undefined) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}')
        return
      }
      if (req.headers['if-none-match'] !== undefined) upstream.served.conditional++
      if (req.headers['if-none-match'] === doc.etag) {
        upstream.served.notModified++
        res.writeHead(304, { etag: doc.etag }).end()
        return
      }
      upstream.served.full++
      res.writeHead(200, { 'content-type': 'application/json', etag: doc.etag }).end(doc.body)
    })()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return Object.assign(upstream, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` })
}

/** Both sides as trusted clients: the public side's https and egress rules are beside the point here (test/upstream covers them). */
function client(t: Test, url: string): UpstreamClient {
  const c = new UpstreamClient({
    url, trusted: true, maxResponseBytes: 1024 * 1024, proxyId: 'revalidation-test', logger: new RecordingLogger(), counters: new UpstreamFetchCounters(),
  })
  t.teardown(() => c.destroy())
  return c
}

function packument(name: string, versions: Record<string, number>): object {
  const time: Record<string, string> = {}
  const manifests: Record<string, object> = {}
  for (const [version, published] of Object.entries(versions)) {
    time[version] = new Date(published).toISOString()
    manifests[version] = { name, version, dist: { tarball: `http://127.0.0.1/${name}/-/${name}-${version}.tgz`, shasum: 'a'.repeat(40) } }
  }
  return { name, 'dist-tags': {}, versions: manifests, time }
}

const QUARANTINE: RuleConfig[] = [{ rule: 'AllowIfOlderThan', seconds: 7 * 86_400 } as RuleConfig]

interface Rig {
  readonly service: PackumentService
  readonly clock: ManualClock
  readonly pub: FakeUpstream
  readonly priv: FakeUpstream
  readonly gate: AdmissionGate
  /** Renders so far (each is a scan and a parse of the documents). */
  renders(): number
  /** Bumps the generation (a database swap, or new rules). */
  swap(rules?: RuleConfig[]): void
  ask(name: string, options?: { abbreviated?: boolean }): Promise<{ versions: string[]; etag: string }>
}

async function rig(t: Test, options: { maxStaleMs?: number } = {}): Promise<Rig> {
  const clock = new ManualClock(Date.parse('2026-11-01T00:00:00Z'))
  const pub = await fakeUpstream(t)
  const priv = await fakeUpstream(t)
  const gate = new AdmissionGate({ budgetBytes: 64 * 1024 * 1024, maxInFlight: 8, waitingRoom: 8 })
  const cache = new MetadataCache<SelectedArtifact>({ maxBytes: 8_000_000, maxEntries: 1000, clock, selectedVersionSize: () => 256, assembledTtlMs: REVALIDATED_RETENTION_MS })
  let generation = 1
  let rules = QUARANTINE
  let renders = 0
  const render = async (job: RenderJob): Promise<PackumentOutcome> => {
    renders++
    const evaluator = createEvaluator(rules, { ecosystem: 'js', database: undefined, clock: { now: () => job.now }, maxAgeSeconds: 6 * 86_400 })
    const decide: Decide = Object.assign((facts: Parameters<Decide>[0]) => evaluator.evaluate(facts, 'admission'), {
      needs: evaluator.needs,
      clock: { now: job.now, ageSteps: evaluator.ageSteps },
    })
    const request = { packageName: job.packageName, baseUrl: 'http://proxy.test/js', abbreviated: job.abbreviated, decide, privateEtag: job.privateEtag, publicEtag: job.publicEtag }
    return mergeAndRender(request,
      job.privateChunks === undefined ? undefined : indexDocument(job.privateChunks, job.abbreviated),
      job.publicChunks === undefined ? undefined : indexDocument(job.publicChunks, job.abbreviated, undefined, decide.needs))
  }
  const service = new PackumentService({
    ecosystem: 'js',
    privateClient: client(t, priv.url),
    publicClient: client(t, pub.url),
    cache,
    clock,
    generation: () => generation,
    observe: () => {},
    render,
    revalidation: { maxStaleMs: options.maxStaleMs ?? MINUTE, admit: (signal) => gate.enter(signal) },
  })
  return {
    service, clock, pub, priv, gate,
    renders: () => renders,
    swap: (next) => { generation++; if (next !== undefined) rules = next },
    ask: async (name, o = {}) => {
      const admission: Admission = await gate.enter()
      try {
        const answer = await service.assemble({ packageName: name, abbreviated: o.abbreviated ?? true, admission, signal: new AbortController().signal })
        const doc = JSON.parse(Buffer.from(answer.body).toString('utf8')) as { versions: Record<string, unknown> }
        return { versions: Object.keys(doc.versions).sort(), etag: answer.etag }
      } finally {
        admission.release()
      }
    },
  }
}

/** Lets the event loop run until `done` holds (requests to the fake upstreams are real I/O). */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 2))
}

t.test('past its freshness, an answer is revalidated: two 304s cost no read and no render, and are counted', async (t) => {
  const r = await rig(t, { maxStaleMs: 0 })
  r.pub.set('left-pad', packument('left-pad', { '1.0.0': r.clock.now() - 30 * DAY }))
  r.priv.set('left-pad', packument('left-pad', { '0.9.0-internal': r.clock.now() - 60 * DAY }))
  const first = await r.ask('left-pad')
  t.same(first.versions, ['0.9.0-internal', '1.0.0'])
  t.equal(r.renders(), 1)

  r.clock.advance(4 * MINUTE)
  t.same(await r.ask('left-pad'), first, 'fresh: served as retained')
  t.equal(r.pub.served.conditional + r.priv.served.conditional, 0, 'nothing asked while fresh')

  r.clock.advance(2 * MINUTE)
  t.same(await r.ask('left-pad'), first, 'the same answer after the revalidation')
  t.equal(r.pub.served.notModified, 1, 'the public upstream was asked with its ETag and answered 304')
  t.equal(r.priv.served.notModified, 1, 'so was the private one')
  t.equal(r.pub.served.full + r.priv.served.full, 2, 'no document was read again')
  t.equal(r.renders(), 1, 'no parse, no render')
  t.match(r.service.revalidations.snapshot(), { not_modified: 1, modified: 0, failed: 0, regated: 0 })

  r.clock.advance(4 * MINUTE)
  await r.ask('left-pad')
  t.equal(r.pub.served.conditional, 1, 'fresh again for five minutes after a 304')
})

t.test('an upstream whose document changed is read and rendered again; the unchanged side is read in full', async (t) => {
  const r = await rig(t, { maxStaleMs: 0 })
  r.pub.set('left-pad', packument('left-pad', { '1.0.0': r.clock.now() - 30 * DAY }))
  r.priv.set('left-pad', packument('left-pad', { '0.9.0-internal': r.clock.now() - 60 * DAY }))
  const first = await r.ask('left-pad')
  r.pub.set('left-pad', packument('left-pad', { '1.0.0': r.clock.now() - 30 * DAY, '1.1.0': r.clock.now() - 20 * DAY }))
  r.clock.advance(6 * MINUTE)
  const second = await r.ask('left-pad')
  t.same(second.versions, ['0.9.0-internal', '1.0.0', '1.1.0'])
  t.not(second.etag, first.etag)
  t.equal(r.renders(), 2)
  t.equal(r.priv.served.notModified, 1)
  t.equal(r.priv.served.full, 2, 'the private side said 304, and its body was never kept: read again')
  t.equal(r.pub.served.full, 2, 'the changed public side was read once, by the conditional request itself')
  t.match(r.service.revalidations.snapshot(), { not_modified: 0, modified: 1 })
})

t.test('within maxStaleMs a request is served at once while one revalidation runs behind; past it, a request waits', async (t) => {
  const r = await rig(t, { maxStaleMs: MINUTE })
  r.pub.set('left-pad', packument('left-pad', { '1.0.0': r.clock.now() - 30 * DAY }))
  const first = await r.ask('left-pad')

  r.clock.advance(5 * MINUTE + 10_000)
  let release!: () => void
  r.pub.hold = new Promise<void>((resolve) => { release = resolve })
  const served = await Promise.all([r.ask('left-pad'), r.ask('left-pad'), r.ask('left-pad')])
  t.same(served, [first, first, first], 'served stale, without waiting for the held upstream')
  t.match(r.service.revalidations.snapshot(), { stale_served: 3 })
  release()
  r.pub.hold = undefined
  await until(() => r.service.revalidations.notModified === 1)
  t.equal(r.pub.served.conditional, 1, 'three stale requests started one revalidation')
  t.equal(r.gate.snapshot().chargedBytes, 0, 'the revalidation behind them released its admission')

  // Fresh again from the revalidation; then past freshness and the bound: a request waits.
  r.clock.advance(5 * MINUTE + MINUTE + 1)
  let hold!: () => void
  r.pub.hold = new Promise<void>((resolve) => { hold = resolve })
  let settled = false
  const waiting = r.ask('left-pad').then((answer) => { settled = true; return answer })
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.notOk(settled, 'past the bound the request waits for the upstream')
  hold()
  r.pub.hold = undefined
  t.same(await waiting, first)
  t.equal(r.renders(), 1, 'still no render: the answer was unchanged')
})

t.test('re-gating: a version reaching its quarantine age is admitted from a retained answer', async (t) => {
  const r = await rig(t)
  const young = r.clock.now() - 7 * DAY + 2 * MINUTE
  r.pub.set('left-pad', packument('left-pad', { '1.0.0': r.clock.now() - 30 * DAY, '1.1.0': young }))
  t.same((await r.ask('left-pad')).versions, ['1.0.0'], '1.1.0 is in quarantine')
  r.clock.advance(MINUTE)
  t.same((await r.ask('left-pad')).versions, ['1.0.0'], 'still fresh and still in quarantine')
  t.equal(r.renders(), 1)
  r.clock.advance(MINUTE)
  const both = await Promise.all([r.ask('left-pad'), r.ask('left-pad')])
  t.same(both.map((b) => b.versions), [['1.0.0', '1.1.0'], ['1.0.0', '1.1.0']], 'the quarantine ended inside the fresh five minutes: gated again')
  t.equal(r.renders(), 2, 'two requests at the crossing share one render')
  t.match(r.service.revalidations.snapshot(), { regated: 1 })
})

t.test('re-gating: a quarantine that applies to another package only does not re-render this one', async (t) => {
  const r = await rig(t)
  r.swap([{ rule: 'AllowIfOlderThan', seconds: 86_400 } as RuleConfig, { rule: 'AllowIfOlderThan', seconds: 30 * 86_400, packages: ['@types/*'] } as RuleConfig])
  r.pub.set('left-pad', packument('left-pad', { '1.0.0': r.clock.now() - 2 * DAY, '1.1.0': r.clock.now() - 20 * DAY }))
  t.same((await r.ask('left-pad')).versions, ['1.0.0', '1.1.0'])
  r.clock.advance(4 * MINUTE)
  await r.ask('left-pad')
  t.equal(r.renders(), 1, 'no version of left-pad reaches an age that matters to it within the fresh minutes')
})

t.test('re-gating: a new database generation, and new rules, render the retained answer again', async (t) => {
  const r = await rig(t)
  r.pub.set('left-pad', packument('left-pad', { '1.0.0': r.clock.now() - 30 * DAY, '1.1.0': r.clock.now() - 3 * DAY }))
  t.same((await r.ask('left-pad')).versions, ['1.0.0'])
  r.swap()
  t.same((await r.ask('left-pad')).versions, ['1.0.0'], 'a database swap renders again (same rules, same answer)')
  t.equal(r.renders(), 2)
  r.swap([{ rule: 'AllowIfOlderThan', seconds: 86_400 } as RuleConfig])
  t.same((await r.ask('left-pad')).versions, ['1.0.0', '1.1.0'], 'a one-day quarantine admits 1.1.0 at once')
  t.equal(r.renders(), 3)
})

t.test('an artifact whose record is gone while the revalidated answer is retained renders once more', async (t) => {
  const r = await rig(t, { maxStaleMs: 0 })
  r.pub.set('left-pad', packument('left-pad', { '1.0.0': r.clock.now() - 30 * DAY }))
  await r.ask('left-pad')
  // Past the records' five minutes, the answer itself revalidated (304) and retained.
  r.clock.advance(6 * MINUTE)
  await r.ask('left-pad')
  t.equal(r.renders(), 1)
  const select = async (filename: string): Promise<SelectedArtifact | undefined> => {
    const admission = await r.gate.enter()
    try {
      return await r.service.selectVersion('left-pad', filename, admission, new AbortController().signal)
    } finally {
      admission.release()
    }
  }
  t.match(await select('left-pad-1.0.0.tgz'), { version: '1.0.0' }, 'found after one render')
  t.equal(r.renders(), 2)
  t.equal(await select('left-pad-9.9.9.tgz'), undefined, 'an unknown file name')
  t.equal(r.renders(), 2, 'costs no render within the minute')
})
