/**
 * SQS refusing sends (issue 30 item 3), proxy side: the enqueue buffer as
 * the proxy wires it (server/roles/enqueue-wiring.ts) in front of a real SQS
 * peer (local-aws-sqs) reached through a fault relay (test/peers/fault-relay.ts)
 * that answers 503, then cuts connections, then lets sends through. Every
 * job downloaded meanwhile is held within the bound and reaches SQS once
 * afterwards; `/readyz` names `conditions.queue` while the buffer is past
 * its share; the metrics show the backlog.
 */
import { SQSClient } from '@aws-sdk/client-sqs'
import t from 'tap'
import { startSqs } from '../../bench/peers/sqs.js'
import { loadConfig } from '../../engine/config/load.js'
import { JOB_OVERHEAD_BYTES, MIRROR_JOBS_LOST, MIRROR_QUEUE_ACCEPTING, MIRROR_QUEUE_REFUSING, READY_SHARE } from '../../engine/mirror/enqueue-buffer.js'
import { decodeMirrorJob, encodeMirrorJob } from '../../engine/mirror/mirror-job.js'
import { computePlan, GiB } from '../../engine/memory/plan.js'
import { SqsQueue } from '../../engine/queue/sqs-queue.js'
import { systemClock } from '../../engine/clock.js'
import { readSnapshot, SNAPSHOT_KEYS, type SnapshotReaders } from '../../engine/telemetry/snapshot-keys.js'
import { Readiness } from '../../server/health/readiness.js'
import { attachEnqueueBuffer, QUEUE_CONDITION } from '../../server/roles/enqueue-wiring.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { FaultRelay } from '../peers/fault-relay.js'
import { job } from './mirror-job-fixture.js'
import { waitFor } from './wait-for.js'

const BUFFER_BYTES = 65_536


t.test('SQS refusing sends: jobs held within the bound, readyz says so, every one sent once afterwards', async (t) => {
  const peer = await startSqs({ queueName: 'outage-jobs' })
  t.teardown(() => peer.stop())
  const relay = await FaultRelay.start({ peer: peer.endpoint })
  t.teardown(() => relay.stop())
  const client = new SQSClient({ endpoint: relay.origin, region: peer.region, credentials: { accessKeyId: 'test', secretAccessKey: 'test' }, maxAttempts: 1 })
  t.teardown(() => client.destroy())
  const queue = new SqsQueue({ url: `${relay.origin}/123456789012/outage-jobs`, client, sendTimeoutMs: 1_000 })
  t.teardown(() => queue.close())

  const loaded = loadConfig({ env: { SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: 'https://upstream.invalid/', SERVICE_QUEUE__ENQUEUE_BUFFER_BYTES: String(BUFFER_BYTES) }, npmRegistry: () => undefined })
  if (!loaded.ok) throw new Error('the configuration did not load')
  const { config } = loaded
  const plan = computePlan({ cgroup: { cpuCores: 2, memoryLimitBytes: GiB }, work: { mirrorTarget: true, queueKind: 'sqs', enqueueBufferBytes: config.queue.enqueueBufferBytes } })
  t.equal(plan.enqueueBuffer.bytes.value, BUFFER_BYTES, 'the plan charges the configured bound')
  const readiness = new Readiness()
  readiness.addMount('js', false)
  readiness.markStarted()
  const snapshots: SnapshotReaders = {}
  const logger = new RecordingLogger()
  const buffer = attachEnqueueBuffer({ config, logger, clock: systemClock, plan, queue, embedded: undefined, readiness, snapshots })
  t.teardown(() => buffer.close(100))

  // As many distinct artifacts as fit in 90% of the bound: past the ready share, within the bound.
  const charge = 2 * Buffer.byteLength(encodeMirrorJob(job(10, 'outage'))) + JOB_OVERHEAD_BYTES
  const count = Math.floor((0.9 * BUFFER_BYTES) / charge)
  t.ok(count * charge > READY_SHARE * BUFFER_BYTES, `${count} jobs are past the share`)

  relay.fault({}, { kind: 'status', status: 503 })
  // Three downloads of each artifact while SQS refuses.
  for (let round = 0; round < 3; round++) for (let n = 10; n < 10 + count; n++) await buffer.enqueue(job(n, 'outage'))
  await waitFor(() => buffer.stats().retried >= count, 'every job was refused once')
  t.match(buffer.stats(), { buffered: count, sent: 0, dropped: 0, recent: 2 * count }, 'one held job per artifact')
  t.same(readiness.body(), { status: 'not_ready', mounts: { js: 'ready' }, conditions: { queue: QUEUE_CONDITION.enqueueBacklog } }, '/readyz names the queue condition')
  const snapshot = readSnapshot(snapshots)[SNAPSHOT_KEYS.mirrorEnqueue] as Record<string, number>
  t.match(snapshot, { buffered: count, maxBytes: BUFFER_BYTES }, 'the metrics part shows the backlog')
  t.ok(snapshot['bufferedBytes']! > READY_SHARE * BUFFER_BYTES)

  // Connections cut without an answer: still held.
  relay.clear()
  relay.fault({}, { kind: 'cut' })
  const refusedBefore = buffer.stats().retried
  await waitFor(() => buffer.stats().retried > refusedBefore, 'a cut send was retried')
  t.match(buffer.stats(), { buffered: count, sent: 0, dropped: 0 })

  relay.clear()
  await waitFor(() => buffer.stats().buffered === 0, 'the backlog is sent', 30_000)
  t.match(buffer.stats(), { sent: count, dropped: 0, failed: 0 })
  t.same(readiness.body(), { status: 'ready', mounts: { js: 'ready' } }, 'ready again once the backlog is gone')
  t.same(logger.find(MIRROR_JOBS_LOST), [], 'nothing lost, nothing logged at error')
  t.equal(logger.find(MIRROR_QUEUE_REFUSING).length, 1)
  t.equal(logger.find(MIRROR_QUEUE_ACCEPTING).length, 1)

  // What SQS holds: one job per artifact, none twice.
  const reader = new SqsQueue({ url: peer.queueUrl, client: peer.client() })
  t.teardown(() => reader.close())
  const packages: string[] = []
  for (let empty = 0; empty < 2;) {
    const messages = await reader.receive({ max: 10, visibilitySeconds: 300 })
    if (messages.length === 0) empty++
    for (const message of messages) packages.push(decodeMirrorJob(message.body).package)
  }
  t.equal(packages.length, count, 'every job reached SQS')
  t.equal(new Set(packages).size, count, 'none twice')
})
