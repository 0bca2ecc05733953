/**
 * The proxy's enqueue path (issue 30 item 1: "the enqueue path keeps up with
 * the relay's own rate"): jobs/s the enqueue buffer (engine/mirror/enqueue-buffer.ts,
 * its defaults: 16 batches of 10 in flight, an 8 MiB bound) moves into the
 * embedded queue (one journal append and fsync per group commit) and into
 * local-aws-sqs (SendMessageBatch), against the artifact relay's own request
 * rate measured in the same run: small (4 KiB) artifacts through the relay
 * process (bench/runners/artifact-relay-server.ts) at 24 connections, the
 * highest rate at which the relay finishes downloads, so the most jobs per
 * second the route could hand over.
 *
 * The producer offers distinct jobs as fast as the buffer takes them,
 * pausing only while the buffer holds more than half its bound (where the
 * proxy's `/readyz` would turn 503), so nothing is lost: the figure is the
 * rate at which the buffer empties into the queue, from the first job
 * offered to the last acknowledged. BENCH_ENQUEUE_JOBS (default 8,000, under
 * the embedded queue's 10,000 pending jobs) and BENCH_DURATION_SECONDS size it.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { silentLogger } from '../../engine/log/logger.js'
import { ENQUEUE_BUFFER_BYTES } from '../../engine/memory/plan.js'
import { EnqueueBuffer, READY_SHARE } from '../../engine/mirror/enqueue-buffer.js'
import type { MirrorJob } from '../../engine/mirror/mirror-job.js'
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'
import type { Queue } from '../../engine/queue/queue.js'
import { SqsQueue } from '../../engine/queue/sqs-queue.js'
import { runLoad } from '../lib/load.js'
import { startRelay } from '../lib/relay-process.js'
import type { Measurement, Row, Scenario, ScenarioResult } from '../lib/scenario.js'
import { startSqs } from '../peers/sqs.js'

const ARTIFACT_BYTES = 4096
const CONNECTIONS = 24
const RELAY = 'relay 4 KiB x24'

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
  const buffer = new EnqueueBuffer({ queue, logger: silentLogger, maxBytes: ENQUEUE_BUFFER_BYTES })
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

async function relayRate(): Promise<Measurement | string> {
  const body = Buffer.alloc(ARTIFACT_BYTES, 7)
  const origin: Server = createServer((req, res) => {
    req.resume()
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(body.byteLength) })
    res.end(body)
  })
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
  const relay = await startRelay(`http://127.0.0.1:${(origin.address() as AddressInfo).port}`)
  try {
    const url = `${relay.origin}/bench-relay/-/bench-relay-1.0.0.tgz`
    await runLoad({ url, connections: CONNECTIONS, durationSeconds: 2 })
    const load = await runLoad({ url, connections: CONNECTIONS, durationSeconds: Number(process.env.BENCH_DURATION_SECONDS ?? 8) })
    if (load.errors > 0 || load.non2xx > 0) return `${load.errors} errors and ${load.non2xx} non-2xx answers`
    return { unit: 'req/s', better: 'higher', value: load.requestsPerSecond }
  } finally {
    await relay.stop()
    origin.closeAllConnections()
    await new Promise<void>((resolve) => origin.close(() => resolve()))
  }
}

const scenario: Scenario = {
  name: 'mirror-enqueue',
  async run(): Promise<ScenarioResult> {
    const jobs = Number(process.env.BENCH_ENQUEUE_JOBS ?? 8_000)
    const notes: string[] = []
    const relay = await relayRate()
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
    notes.push(`${jobs} distinct jobs per queue; the relay answers ${ARTIFACT_BYTES}-byte artifacts at ${CONNECTIONS} connections (private leg, no gate): the most downloads per second the route could finish`)
    return { title: 'Mirror enqueue path against the relay rate', rows, notes }
  },
}

export default scenario
