/**
 * The mirror worker (issue 12, SPEC.md 6.1): jobs per second through the
 * real consumer, worker and target client, on the embedded queue and on SQS
 * (local-aws-sqs), publishing to a Verdaccio mirror target; and the memory
 * it takes to mirror 64 MiB artifacts.
 *
 * Throughput: N distinct small packages are served by an https source (the
 * public leg, a throwaway CA) and enqueued first; the clock runs from the
 * consumer's start until every job is mirrored. Baseline, same run, same
 * Verdaccio: the same publish documents (built with the worker's own
 * publish-body helpers) PUT straight to Verdaccio with `concurrency` at once,
 * no queue, no source fetch, no verification. The ratio is what the worker's
 * whole job (queue round trips, target lookup, manifest read, fetch, hash,
 * streamed publish) costs against the bare publish.
 *
 * Memory: a few 64 MiB artifacts mirrored at the same concurrency; the figure
 * is the growth of this process's RSS over its level before the phase
 * (sampled, the worker runs in-process; the source server streams the file
 * from disk). Baseline, measured after it in the same process: the naive
 * publish that holds the whole tarball and its base64 document in memory.
 *
 * Env: BENCH_MIRROR_JOBS (small jobs per measurement, default 200),
 * BENCH_MIRROR_SMALL_BYTES (default 64 KiB), BENCH_MIRROR_LARGE_JOBS
 * (default = concurrency), BENCH_MIRROR_LARGE_MIB (default 64),
 * BENCH_MIRROR_CONCURRENCY (default: the plan's wanted figure, 2 per core up
 * to 8, SPEC.md 8.2).
 */
import { createHash, randomBytes } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Agent, request } from 'undici'
import { silentLogger } from '../../engine/log/logger.js'
import { MirrorConsumer } from '../../engine/mirror/mirror-consumer.js'
import { MirrorCounters, type MirrorResult } from '../../engine/mirror/mirror-counters.js'
import { encodeMirrorJob, mirrorJobKey, type MirrorJob } from '../../engine/mirror/mirror-job.js'
import { JsTargetProtocol } from '../../engine/mirror/js-target-protocol.js'
import { MirrorTarget } from '../../engine/mirror/mirror-target.js'
import { MirrorWorker } from '../../engine/mirror/mirror-worker.js'
import { attachmentName, publishDocumentParts } from '../../engine/mirror/publish-body.js'
import { publishedManifest } from '../../engine/mirror/version-manifest.js'
import { MIRROR_CONCURRENCY_MAX, MIRROR_JOBS_PER_CORE } from '../../engine/memory/plan.js'
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'
import type { Queue } from '../../engine/queue/queue.js'
import { SqsQueue } from '../../engine/queue/sqs-queue.js'
import { BearerToken } from '../../engine/secret.js'
import { UpstreamFetchCounters } from '../../engine/upstream/fetch-counters.js'
import { UpstreamClient } from '../../engine/upstream/upstream-client.js'
import { startSqs } from '../peers/sqs.js'
import { makeTestCa, type TestCa } from '../peers/tls.js'
import { startVerdaccio, type VerdaccioPeer } from '../peers/verdaccio.js'
import type { Row, Scenario, ScenarioResult } from '../lib/scenario.js'

const MIB = 1024 * 1024
const JOBS = Number(process.env['BENCH_MIRROR_JOBS'] ?? 200)
const SMALL_BYTES = Number(process.env['BENCH_MIRROR_SMALL_BYTES'] ?? 64 * 1024)
const CONCURRENCY = Number(process.env['BENCH_MIRROR_CONCURRENCY'] ?? Math.min(MIRROR_CONCURRENCY_MAX, MIRROR_JOBS_PER_CORE * availableParallelism()))
const LARGE_JOBS = Number(process.env['BENCH_MIRROR_LARGE_JOBS'] ?? CONCURRENCY)
const LARGE_BYTES = Number(process.env['BENCH_MIRROR_LARGE_MIB'] ?? 64) * MIB
const VERSION = '1.0.0'
// No job here should fail; a stuck one must end the scenario, not hang it.
const PHASE_TIMEOUT_MS = 600_000

interface Artifact {
  /** In memory (small) or a file streamed from disk (large). */
  readonly bytes?: Buffer
  readonly file?: string
  readonly size: number
  readonly integrity: string
  readonly shasum: string
}

function digestsOf(bytes: Buffer): { integrity: string, shasum: string } {
  return {
    integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
    shasum: createHash('sha1').update(bytes).digest('hex'),
  }
}

/** The public leg: packuments and artifacts of the packages registered on it, over https. */
class Source {
  readonly #packages = new Map<string, Artifact>()
  readonly #server: Server
  origin = ''

  constructor(ca: TestCa) {
    this.#server = createServer({ key: ca.keyPem, cert: ca.certPem }, (req, res) => {
      const path = decodeURIComponent((req.url ?? '/').slice(1))
      const slash = path.indexOf('/-/')
      const name = slash === -1 ? path : path.slice(0, slash)
      const artifact = this.#packages.get(name)
      if (artifact === undefined) {
        res.writeHead(404).end()
        return
      }
      if (slash === -1) {
        const body = JSON.stringify(this.packument(name, artifact))
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body)
        return
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': artifact.size })
      if (artifact.bytes !== undefined) res.end(artifact.bytes)
      else createReadStream(artifact.file as string).pipe(res)
    })
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve))
    this.origin = `https://127.0.0.1:${(this.#server.address() as AddressInfo).port}`
  }

  add(name: string, artifact: Artifact): MirrorJob {
    this.#packages.set(name, artifact)
    return {
      url: this.tarball(name), package: name, version: VERSION, filename: `${name}-${VERSION}.tgz`,
      integrity: artifact.integrity, shasum: artifact.shasum, enqueuedAt: new Date().toISOString(),
    }
  }

  tarball(name: string): string {
    return `${this.origin}/${name}/-/${name}-${VERSION}.tgz`
  }

  packument(name: string, artifact: Artifact): Record<string, unknown> {
    return {
      name,
      'dist-tags': { latest: VERSION },
      versions: {
        [VERSION]: { name, version: VERSION, license: 'MIT', dist: { integrity: artifact.integrity, shasum: artifact.shasum, tarball: this.tarball(name) } },
      },
      time: { [VERSION]: '2020-01-01T00:00:00.000Z' },
    }
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections()
    await new Promise((resolve) => this.#server.close(resolve))
  }
}

interface Rig {
  readonly source: Source
  readonly client: UpstreamClient
  readonly verdaccio: VerdaccioPeer
  readonly token: string
  readonly dir: string
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + PHASE_TIMEOUT_MS
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const FAILURES: readonly MirrorResult[] = ['collision', 'integrity_mismatch', 'too_large', 'no_digest', 'publish_refused', 'upstream_refused', 'discarded', 'given_up']

/**
 * Enqueues `jobs`, then runs the real consumer and worker until every job is
 * mirrored; returns the seconds from the consumer's start to the last one.
 */
async function runWorker(rig: Rig, queue: Queue, jobs: readonly MirrorJob[], onTick?: () => void): Promise<number> {
  for (const job of jobs) await queue.send(encodeMirrorJob(job), { dedupKey: mirrorJobKey(job) })
  const target = new MirrorTarget({ url: rig.verdaccio.url, token: new BearerToken(rig.token), maxDocumentBytes: 64 * MIB })
  const worker = new MirrorWorker({ source: rig.client, target: new JsTargetProtocol(target), maxArtifactBytes: 512 * MIB, logger: silentLogger })
  const counters = new MirrorCounters()
  const consumer = new MirrorConsumer({ queue, worker, counters, logger: silentLogger, concurrency: CONCURRENCY, maxReceiveCount: 5, waitSeconds: 1, receiveRetryMs: 200 })
  const started = performance.now()
  consumer.start()
  try {
    await until(() => {
      onTick?.()
      const failed = FAILURES.find((r) => counters.get(r) > 0)
      if (failed !== undefined) throw new Error(`a mirror job ended ${failed}: ${JSON.stringify(counters.snapshot())}`)
      return counters.get('mirrored') >= jobs.length
    }, `${jobs.length} mirrored jobs`)
    return (performance.now() - started) / 1000
  } finally {
    await consumer.stop(5_000)
    await target.close()
  }
}

/** The document the worker would stream for `job`, built whole (the baseline's publish). */
function wholeDocument(rig: Rig, job: MirrorJob, bytes: Buffer): string {
  const targetTarball = new URL(`${job.package}/-/${job.filename}`, rig.verdaccio.url).href
  const artifact: Artifact = { size: bytes.byteLength, integrity: job.integrity as string, shasum: job.shasum as string }
  const manifest = (rig.source.packument(job.package, artifact)['versions'] as Record<string, Record<string, unknown>>)[VERSION] as Record<string, unknown>
  const parts = publishDocumentParts({ name: job.package, version: VERSION, manifest: publishedManifest(manifest, targetTarball), attachment: attachmentName(job.package, job.filename) })
  return parts.head + bytes.toString('base64') + parts.tail(bytes.byteLength)
}

/** Runs `count` tasks, `CONCURRENCY` at once. */
async function pool(count: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, count) }, async () => {
    while (next < count) await task(next++)
  }))
}

async function directPut(rig: Rig, dispatcher: Agent, name: string, body: string): Promise<void> {
  const res = await request(`${rig.verdaccio.origin}/${name}`, {
    method: 'PUT', dispatcher,
    headers: { authorization: `Bearer ${rig.token}`, 'content-type': 'application/json', accept: 'application/json' },
    body,
  })
  await res.body.dump()
  if (res.statusCode !== 200 && res.statusCode !== 201) throw new Error(`verdaccio answered ${res.statusCode} to the direct publish of ${name}`)
}

/** Seconds for the same small publishes done directly (documents built beforehand, off the clock). */
async function runDirect(rig: Rig, prefix: string, artifact: Buffer): Promise<number> {
  const digests = digestsOf(artifact)
  const bodies = Array.from({ length: JOBS }, (_, i) => {
    const name = `${prefix}-${i}`
    const job = { url: rig.source.tarball(name), package: name, version: VERSION, filename: `${name}-${VERSION}.tgz`, ...digests, enqueuedAt: '' }
    return { name, body: wholeDocument(rig, job, artifact) }
  })
  const dispatcher = new Agent({ connections: 8 })
  try {
    const started = performance.now()
    await pool(JOBS, (i) => directPut(rig, dispatcher, bodies[i]!.name, bodies[i]!.body))
    return (performance.now() - started) / 1000
  } finally {
    await dispatcher.close()
  }
}

function smallJobs(rig: Rig, prefix: string, artifact: Buffer): MirrorJob[] {
  const digests = digestsOf(artifact)
  return Array.from({ length: JOBS }, (_, i) => rig.source.add(`${prefix}-${i}`, { bytes: artifact, size: artifact.byteLength, ...digests }))
}

/** Highest RSS growth over `before`, sampled while `work` runs. */
async function rssGrowth(work: (tick: () => void) => Promise<unknown>): Promise<number> {
  const before = process.memoryUsage.rss()
  let peak = before
  const tick = (): void => {
    peak = Math.max(peak, process.memoryUsage.rss())
  }
  // The interval catches growth between the work's own ticks.
  const timer = setInterval(tick, 10)
  try {
    await work(tick)
  } finally {
    clearInterval(timer)
  }
  tick()
  return peak - before
}

async function measure(): Promise<ScenarioResult> {
  const ca = await makeTestCa()
  const dir = await mkdtemp(join(tmpdir(), 'bench-mirror-'))
  const source = new Source(ca)
  let verdaccio: VerdaccioPeer | undefined
  let client: UpstreamClient | undefined
  const stops: (() => Promise<unknown>)[] = []
  try {
    await source.listen()
    verdaccio = await startVerdaccio({ role: 'private' })
    const token = await verdaccio.publisherToken()
    client = new UpstreamClient({
      url: `${source.origin}/`, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'],
      maxResponseBytes: 64 * MIB, proxyId: 'bench', logger: silentLogger, counters: new UpstreamFetchCounters(),
    })
    const rig: Rig = { source, client, verdaccio, token, dir }
    const small = randomBytes(SMALL_BYTES)

    // Warm-up, off the record: connections, JIT, Verdaccio's first writes.
    await runDirect(rig, 'bench-warm-direct', small)

    const directSeconds = await runDirect(rig, 'bench-direct', small)

    const embedded = await EmbeddedQueue.open({ dir: join(dir, 'queue') })
    stops.push(() => embedded.close())
    const embeddedSeconds = await runWorker(rig, embedded, smallJobs(rig, 'bench-embedded', small))

    let sqsSeconds: number | string
    try {
      const sqs = await startSqs({ visibilityTimeoutSeconds: 120 })
      stops.push(() => sqs.stop())
      const queue = new SqsQueue({ url: sqs.queueUrl, region: sqs.region, endpoint: sqs.endpoint, client: sqs.client() })
      stops.push(() => queue.close())
      sqsSeconds = await runWorker(rig, queue, smallJobs(rig, 'bench-sqs', small))
    } catch (error) {
      sqsSeconds = `the SQS run failed: ${String(error)}`
    }

    // Memory: the large artifacts, worker first, then the naive publish.
    const largeFile = join(dir, 'large.tgz')
    const large = randomBytes(LARGE_BYTES)
    await writeFile(largeFile, large)
    const largeDigests = digestsOf(large)
    large.fill(0)
    const largeJobs = Array.from({ length: LARGE_JOBS }, (_, i) => source.add(`bench-large-${i}`, { file: largeFile, size: LARGE_BYTES, ...largeDigests }))
    const workerGrowth = await rssGrowth((tick) => runWorker(rig, embedded, largeJobs, tick))
    const dispatcher = new Agent({ connections: 8, bodyTimeout: 300_000, headersTimeout: 300_000 })
    let naiveGrowth: number
    try {
      naiveGrowth = await rssGrowth(() => pool(LARGE_JOBS, async (i) => {
        const name = `bench-naive-${i}`
        const bytes = await readFile(largeFile)
        const job = { url: source.tarball(name), package: name, version: VERSION, filename: `${name}-${VERSION}.tgz`, ...largeDigests, enqueuedAt: '' }
        await directPut(rig, dispatcher, name, wholeDocument(rig, job, bytes))
      }))
    } finally {
      await dispatcher.close()
    }

    const jobsRow = (label: string, seconds: number | string): Row => ({
      metric: `jobs/s ${label}, ${JOBS} x ${SMALL_BYTES / 1024} KiB`,
      project: { unit: 'jobs/s', better: 'higher', value: typeof seconds === 'number' ? JOBS / seconds : NaN },
      baselines: { 'direct PUT': { unit: 'jobs/s', better: 'higher', value: JOBS / directSeconds } },
    })
    const rows: Row[] = [jobsRow('embedded queue', embeddedSeconds)]
    if (typeof sqsSeconds === 'number') rows.push(jobsRow('SQS (local-aws-sqs)', sqsSeconds))
    rows.push({
      metric: `RSS growth mirroring ${LARGE_BYTES / MIB} MiB x ${LARGE_JOBS}`,
      project: { unit: 'MiB', better: 'lower', value: workerGrowth / MIB },
      baselines: { 'whole tarball + base64 in memory': { unit: 'MiB', better: 'lower', value: naiveGrowth / MIB } },
    })
    const notes = [
      `concurrency ${CONCURRENCY} (jobs at once, worker and direct PUT alike); Verdaccio ${verdaccio.port} as the target, one instance for every phase`,
      `worker RSS growth / (artifact size x ${LARGE_JOBS} jobs) = ${(workerGrowth / (LARGE_BYTES * LARGE_JOBS)).toFixed(3)}; whole tarball + base64 per job would be ${((LARGE_BYTES * (1 + 4 / 3)) / MIB).toFixed(0)} MiB`,
      'RSS is this bench process (worker, queue, source server streaming from disk), sampled every 10 ms; the naive baseline runs after the worker in the same process',
    ]
    if (typeof sqsSeconds === 'string') notes.push(sqsSeconds)
    return { title: 'mirror worker: jobs/s through the queue to a Verdaccio target, and memory on 64 MiB artifacts', rows, notes }
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined)
    await client?.close()
    await verdaccio?.stop()
    await source.close()
    await rm(dir, { recursive: true, force: true })
    await ca.remove()
  }
}

const scenario: Scenario = { name: 'mirror-worker', run: measure }
export default scenario
