/**
 * The proxy's enqueue path (issue 30 item 1, "Must show": "jobs/s the
 * enqueue path sustains on the embedded queue and on SQS against the relay's
 * own request rate, in one run"): jobs/s the enqueue buffer
 * (engine/mirror/enqueue-buffer.ts, as the proxy wires it: its defaults,
 * 16 batches of 10 in flight, an 8 MiB bound, and the recent-enqueue memory)
 * moves into the embedded queue (one journal append and fsync per group
 * commit) and into local-aws-sqs (SendMessageBatch), against the request
 * rate of the proxy's own public leg measured in the same run.
 *
 * The baseline is the built `service proxy` (one core, its own process)
 * serving 4 KiB public artifacts from a scripted https upstream
 * (bench/peers/scripted-public-upstream.ts) to 24 keep-alive clients, with
 * no mirror target (so nothing is enqueued): each request takes the whole
 * public leg (private leg absent, the version selected from the retained
 * packument, the gate, the relay of the upstream's tarball). A mirrored
 * mount enqueues one job per such download at most, so this is the most
 * jobs per second the route could hand the buffer; the goal is the buffer
 * keeping up with it (>= 1x).
 *
 * The producer offers distinct jobs as fast as the buffer takes them,
 * pausing only while the buffer holds more than half its bound (where the
 * proxy's `/readyz` would turn 503), so nothing is lost: the figure is the
 * rate at which the buffer empties into the queue, from the first job
 * offered to the last acknowledged. BENCH_ENQUEUE_JOBS (default 8,000, under
 * the embedded queue's 10,000 pending jobs) and BENCH_DURATION_SECONDS (the
 * relay's load, default 8 s after a 2 s warm-up) size it.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { benchProxyConfig } from '../lib/proxy-config.js'
import { silentLogger } from '../../engine/log/logger.js'
import { ENQUEUE_BUFFER_BYTES, ENQUEUE_MEMORY_ENTRIES } from '../../engine/memory/plan.js'
import { EnqueueBuffer, READY_SHARE } from '../../engine/mirror/enqueue-buffer.js'
import { LocalEnqueueMemory } from '../../engine/mirror/enqueue-memory.js'
import type { MirrorJob } from '../../engine/mirror/mirror-job.js'
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'
import type { Queue } from '../../engine/queue/queue.js'
import { SqsQueue } from '../../engine/queue/sqs-queue.js'
import { fetchBytes } from '../lib/baselines.js'
import { runLoad } from '../lib/load.js'
import { freePort } from '../lib/nginx.js'
import type { Measurement, Row, Scenario, ScenarioResult } from '../lib/scenario.js'
import { ScriptedPublicUpstream, tarballPath } from '../peers/scripted-public-upstream.js'
import { ServiceProcess } from '../peers/service-process.js'
import { startSqs } from '../peers/sqs.js'
import { makeTestCa } from '../peers/tls.js'

const ARTIFACT_BYTES = 4096
const CONNECTIONS = 24
const RELAY = `proxy public leg 4 KiB x${CONNECTIONS}`
/** `queue.enqueueMemorySeconds`' default: the proxy's memory holds every job offered here. */
const MEMORY_TTL_MS = 300_000

function job(n: number): MirrorJob {
  return {
    url: `https://127.0.0.1:8443/bench-${n}/-/bench-${n}-1.0.0.tgz`,
    package: `bench-${n}`,
    version: '1.0.0',
    filename: `bench-${n}-1.0.0.tgz`,
    integrity: `sha512-${Buffer.alloc(64, n % 256).toString('base64')}`,
    shasum: 'c'.repeat(40),
    enqueuedAt: new Date().toISOString(),
  }
}

/** Jobs/s from the first job offered to the last one the queue acknowledged. */
async function enqueueRate(queue: Pick<Queue, 'sendBatch'>, jobs: number): Promise<{ rate: number, lost: number }> {
  const memory = new LocalEnqueueMemory({ maxEntries: ENQUEUE_MEMORY_ENTRIES })
  const buffer = new EnqueueBuffer({ queue, logger: silentLogger, maxBytes: ENQUEUE_BUFFER_BYTES, memory, memoryTtlMs: MEMORY_TTL_MS })
  const started = performance.now()
  for (let n = 0; n < jobs; n++) {
    while (buffer.stats().bufferedBytes > READY_SHARE * ENQUEUE_BUFFER_BYTES) await new Promise((resolve) => setTimeout(resolve, 1))
    await buffer.enqueue(job(n))
  }
  while (buffer.stats().buffered > 0) await new Promise((resolve) => setTimeout(resolve, 1))
  const seconds = (performance.now() - started) / 1000
  const stats = buffer.stats()
  await buffer.close(1_000)
  return { rate: stats.sent / seconds, lost: stats.dropped + stats.failed }
}

/** What the relay baseline saw besides its rate, for the notes. */
interface RelayRun { readonly rate: Measurement | string, readonly requests: number, readonly upstreamTarballs: number }

/** Requests/s of the built proxy's public leg: one artifact, its packument retained after the first request, every tarball relayed. */
async function relayRate(): Promise<RelayRun> {
  const ca = await makeTestCa()
  const upstream = await ScriptedPublicUpstream.start(ca, { prefix: 'bench', artifactBytes: ARTIFACT_BYTES })
  const dir = await mkdtemp(join(tmpdir(), 'bench-enqueue-proxy-'))
  let proxy: ServiceProcess | undefined
  try {
    const port = await freePort()
    const config = join(dir, 'proxy.yaml')
    await writeFile(config, benchProxyConfig(port, dir, {
      cache: { warmPath: join(dir, 'warm') },
      // No mirror target (nothing enqueued), no private leg, no advisory rule (ready without a database).
      mounts: { js: { upstreams: { public: { url: upstream.url, caFile: ca.caFile, allowInternalRanges: ['127.0.0.0/8'] } }, rules: [{ rule: 'AllowIfOlderThan', seconds: 0 }] } },
    }))
    proxy = await ServiceProcess.start('proxy', config, port)
    const name = 'bench-relay'
    const url = `http://127.0.0.1:${port}/js${tarballPath(name)}`
    const check = await fetchBytes(url)
    if (check.status !== 200 || !check.body.equals(upstream.tarball(name))) throw new Error(`the proxy answered ${check.status} with other bytes for ${name}`)
    await runLoad({ url, connections: CONNECTIONS, durationSeconds: 2 })
    const before = upstream.tarballReads.get(name) ?? 0
    const load = await runLoad({ url, connections: CONNECTIONS, durationSeconds: Number(process.env.BENCH_DURATION_SECONDS ?? 8) })
    const upstreamTarballs = (upstream.tarballReads.get(name) ?? 0) - before
    const rate: Measurement | string = load.errors > 0 || load.non2xx > 0
      ? `${load.errors} errors and ${load.non2xx} non-2xx answers`
      : { unit: 'req/s', better: 'higher', value: load.requestsPerSecond }
    return { rate, requests: load.requests, upstreamTarballs }
  } finally {
    await proxy?.stop()
    await upstream.stop()
    await ca.remove()
    await rm(dir, { recursive: true, force: true })
  }
}

const scenario: Scenario = {
  name: 'mirror-enqueue',
  async run(): Promise<ScenarioResult> {
    const jobs = Number(process.env.BENCH_ENQUEUE_JOBS ?? 8_000)
    const notes: string[] = []
    const relayRun = await relayRate()
    const relay = relayRun.rate
    const rows: Row[] = []
    const row = (queueName: string, measured: { rate: number, lost: number }): void => {
      if (measured.lost > 0) notes.push(`${queueName}: ${measured.lost} jobs lost`)
      rows.push({
        metric: `enqueue jobs/s, ${queueName}`,
        project: { unit: 'jobs/s', better: 'higher', value: measured.rate },
        baselines: { [RELAY]: relay },
        goal: { baseline: RELAY, goodness: 1, text: `>= 1x the ${RELAY} rate` },
      })
    }

    const dir = await mkdtemp(join(tmpdir(), 'bench-enqueue-'))
    try {
      const embedded = await EmbeddedQueue.open({ dir: join(dir, 'queue') })
      try {
        row('embedded queue', await enqueueRate(embedded, jobs))
      } finally {
        await embedded.close()
      }
    } finally {
      await rm(dir, { recursive: true, force: true })
    }

    const sqs = await startSqs({ queueName: 'bench-enqueue' })
    try {
      const queue = new SqsQueue({ url: sqs.queueUrl, region: sqs.region, endpoint: sqs.endpoint, client: sqs.client() })
      try {
        row('local-aws-sqs', await enqueueRate(queue, jobs))
      } finally {
        await queue.close()
      }
    } finally {
      await sqs.stop()
    }
    notes.push(
      `${jobs} distinct jobs per queue, through the buffer with the proxy's defaults (8 MiB bound, recent-enqueue memory)`,
      `baseline: the built proxy (one core) answering ${ARTIFACT_BYTES}-byte public artifacts to ${CONNECTIONS} keep-alive connections, mirror off; `
        + `the scripted upstream relayed ${relayRun.upstreamTarballs} tarballs for the ${relayRun.requests} measured requests (each one a relay, none served from a copy)`,
      'local-aws-sqs runs in the bench\'s own process, so its row measures the emulator as much as the buffer',
    )
    return { title: 'Mirror enqueue path against the proxy\'s public-leg relay rate', rows, notes }
  },
}

export default scenario
