/**
 * The mirror tier of issue 30's "Must show", for the fleet tests: 3 proxy
 * processes and 2 `service mirror` workers (the built service, run by
 * test/helpers/service-process.ts and killed by their process group at
 * teardown), one local-aws-sqs queue with a redrive policy to its
 * dead-letter queue (bench/peers/sqs.ts), Verdaccio as private registry and
 * mirror target (bench/peers/verdaccio.ts), and a scripted public upstream
 * over https with the test CA (bench/peers/scripted-public-upstream.ts: any
 * `fleet-*` name exists, version 1.0.0, its tarball made from the name).
 *
 * Two fault relays (test/peers/fault-relay.ts) stand where a scenario
 * breaks something: one between the proxies and SQS (the workers reach SQS
 * directly), one between the workers and the mirror target (the proxies'
 * private leg reaches Verdaccio directly, so downloads keep working while
 * the mirror target refuses). Each counts the requests it relays.
 *
 * Proxies export their metrics over Prometheus on a port of their own, so a
 * test reads `service.mirror.enqueue{outcome}` from each. With
 * `sharedCache` the proxies run on `cache.backend: redis` (a redis-server
 * of the fleet's own), as a tier sharing one recent-enqueue memory does.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs'
import type { Test } from 'tap'
import { Client, request } from 'undici'
import YAML from 'yaml'
import { startSqs, type SqsPeer } from '../../bench/peers/sqs.js'
import { artifactBytes, ScriptedPublicUpstream, tarballPath, VERSION } from '../../bench/peers/scripted-public-upstream.js'
import { makeTestCa } from '../../bench/peers/tls.js'
import { startVerdaccio, type VerdaccioPeer } from '../../bench/peers/verdaccio.js'
import { MIRROR_ENQUEUE_MEMORY_FAILED } from '../../engine/mirror/enqueue-buffer.js'
import { MIRROR_JOB_MIRRORED } from '../../engine/mirror/mirror-worker.js'
import { MIRROR_LISTENING } from '../../server/roles/mirror.js'
import { freePort } from '../helpers/ports.js'
import { runService, type ServiceRun } from '../helpers/service-process.js'
import { FaultRelay } from '../peers/fault-relay.js'
import { startRedis, type RedisPeer } from '../peers/redis.js'

/** Boots of five services at once on the shared 2-core machine, loaded by others. */
export const BOOT_TIMEOUT_MS = 150_000
const ACCOUNT_ID = '123456789012'

export { tarballPath }

export interface FleetProxy {
  readonly index: number
  readonly port: number
  readonly metricsPort: number
  readonly configFile: string
  run: ServiceRun
}

export interface FleetOptions {
  /** The redrive policy's maxReceiveCount. */
  readonly maxReceiveCount: number
  /** `queue.enqueueBufferBytes` of the proxies; default the product's. */
  readonly enqueueBufferBytes?: number
  /** `limits.mirrorConcurrency` of each worker; default the product's. */
  readonly mirrorConcurrency?: number
  /** `limits.mirrorTargetSlowMs` of each worker; default the product's (automatic). */
  readonly mirrorTargetSlowMs?: number
  /** The proxies' `server.drainDelaySeconds` (lame-duck period); default 0, as test/helpers/service-process.ts sets it. */
  readonly drainDelaySeconds?: number
  /**
   * The proxies on `cache.backend: redis` (one real redis-server, test/peers/redis.ts):
   * one recent-enqueue memory for the tier, so one job per artifact across
   * every proxy (docs/mirror.md). Default: each proxy's own memory.
   */
  readonly sharedCache?: boolean
}

export interface Fleet {
  readonly sqs: SqsPeer
  readonly sqsClient: SQSClient
  /** Between the proxies and SQS. */
  readonly sqsRelay: FaultRelay
  readonly target: VerdaccioPeer
  /** Between the workers and the mirror target. */
  readonly targetRelay: FaultRelay
  readonly upstream: ScriptedPublicUpstream
  /** The proxies' shared backend, when `sharedCache` asked for one. */
  readonly redis: RedisPeer | undefined
  readonly proxies: FleetProxy[]
  readonly workers: ServiceRun[]
  /** SIGKILL of proxy `i` (its process group); resolves once it is gone. */
  killProxy(i: number): Promise<void>
  /** Starts proxy `i` again on its port and configuration; resolves once it listens. */
  restartProxy(i: number): Promise<void>
  /** Packages the workers logged as mirrored, from their stdout. */
  mirroredByWorkers(): Set<string>
  /** Whether the target lists `name`@1.0.0. */
  heldByTarget(name: string): Promise<boolean>
  /** The proxy's `service.mirror.enqueue` counters by outcome, from its Prometheus listener. */
  enqueueCounts(i: number): Promise<Record<string, number>>
  /** Claims proxy `i`'s recent-enqueue memory could not answer (jobs let through), from its debug log; with `sharedCache` only. */
  memoryFailures(i: number): number
  /** The jobs proxy `i`'s enqueue buffer holds (`service.mirror.enqueue.backlog`). */
  enqueueBacklog(i: number): Promise<number>
  /** Messages visible, in flight, on the work queue and on the dead-letter queue. */
  queueDepths(): Promise<{ visible: number, inFlight: number, deadLettered: number }>
}

function startProxy(t: Test, proxy: Omit<FleetProxy, 'run'>, awsEnv: Record<string, string>, drainDelaySeconds: number): ServiceRun {
  return runService(t, ['proxy', '--config', proxy.configFile], {
    ...awsEnv,
    SERVICE_SERVER__DRAIN_DELAY_SECONDS: String(drainDelaySeconds),
    OTEL_METRICS_EXPORTER: 'prometheus',
    OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1',
    OTEL_EXPORTER_PROMETHEUS_PORT: String(proxy.metricsPort),
    OTEL_TRACES_EXPORTER: 'none',
    OTEL_LOGS_EXPORTER: 'none',
  })
}

export async function startFleet(t: Test, options: FleetOptions): Promise<Fleet> {
  const [sqs, target, ca] = await Promise.all([startSqs({ maxReceiveCount: options.maxReceiveCount }), startVerdaccio({ role: 'private' }), makeTestCa()])
  t.teardown(() => Promise.all([sqs.stop(), target.stop(), ca.remove()]))
  const token = await target.publisherToken()
  const upstream = await ScriptedPublicUpstream.start(ca, { prefix: 'fleet' })
  t.teardown(() => upstream.stop())
  const sqsRelay = await FaultRelay.start({ peer: sqs.endpoint })
  t.teardown(() => sqsRelay.stop())
  const targetRelay = await FaultRelay.start({ peer: target.origin, rewrite: true })
  t.teardown(() => targetRelay.stop())
  const sqsClient = sqs.client()
  const redis = options.sharedCache === true ? await startRedis(t) : undefined
  // A claim bound of a second, not the default 100 ms: on the loaded 2-core test machine a claim
  // past its bound lets the job through (a duplicate, docs/mirror.md), which the tier-wide figure would count.
  const cache = redis === undefined ? {} : { cache: { backend: 'redis', url: redis.url, timeoutMs: 1_000 } }
  // At debug the proxies log each claim the memory could not answer (MIRROR_ENQUEUE_MEMORY_FAILED), which a test counts.
  const observability = { telemetry: 'on', ...(redis === undefined ? {} : { logLevel: 'debug' }) }

  const dir = await mkdtemp(join(tmpdir(), 'fleet-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const awsEnv = { AWS_ACCESS_KEY_ID: sqs.accessKeyId, AWS_SECRET_ACCESS_KEY: sqs.secretAccessKey, AWS_REGION: sqs.region }
  const publicLeg = { url: upstream.url, caFile: ca.caFile, allowInternalRanges: ['127.0.0.0/8'] }
  const rules = [{ rule: 'AllowIfOlderThan', seconds: 0 }]

  const proxies: FleetProxy[] = []
  for (let index = 0; index < 3; index++) {
    const port = await freePort()
    const configFile = join(dir, `proxy-${index}.yaml`)
    await writeFile(configFile, YAML.stringify({
      server: { host: '127.0.0.1', port, baseUrl: `http://127.0.0.1:${port}` },
      runtime: { cores: 1 },
      observability,
      ...cache,
      mounts: { js: { upstreams: { private: { url: target.url }, public: publicLeg }, mirror: { target: target.url, token }, rules } },
      queue: {
        kind: 'sqs', url: `${sqsRelay.origin}/${ACCOUNT_ID}/${sqs.queueName}`, region: sqs.region, endpoint: sqsRelay.origin,
        ...(options.enqueueBufferBytes === undefined ? {} : { enqueueBufferBytes: options.enqueueBufferBytes }),
      },
    }))
    proxies.push({ index, port, metricsPort: await freePort(), configFile } as FleetProxy)
  }
  const workerConfigs: string[] = []
  for (let index = 0; index < 2; index++) {
    const port = await freePort()
    const configFile = join(dir, `worker-${index}.yaml`)
    await writeFile(configFile, YAML.stringify({
      server: { host: '127.0.0.1', port, baseUrl: `http://127.0.0.1:${port}` },
      runtime: { cores: 1 },
      limits: {
        ...(options.mirrorConcurrency === undefined ? {} : { mirrorConcurrency: options.mirrorConcurrency }),
        ...(options.mirrorTargetSlowMs === undefined ? {} : { mirrorTargetSlowMs: options.mirrorTargetSlowMs }),
      },
      mounts: { js: { upstreams: { private: { url: `${targetRelay.origin}/` }, public: publicLeg }, mirror: { target: `${targetRelay.origin}/`, token }, rules } },
      queue: { kind: 'sqs', url: sqs.queueUrl, region: sqs.region, endpoint: sqs.endpoint },
    }))
    workerConfigs.push(configFile)
  }

  for (const proxy of proxies) proxy.run = startProxy(t, proxy, awsEnv, options.drainDelaySeconds ?? 0)
  const workers = workerConfigs.map((configFile) => runService(t, ['mirror', '--config', configFile], awsEnv))
  await Promise.all([
    ...proxies.map((proxy) => proxy.run.waitForOutput('proxy listening', BOOT_TIMEOUT_MS)),
    ...workers.map((worker) => worker.waitForOutput(MIRROR_LISTENING, BOOT_TIMEOUT_MS)),
  ])

  const targetClient = new Client(target.origin, { pipelining: 1 })
  t.teardown(() => targetClient.destroy())

  return {
    sqs, sqsClient, sqsRelay, target, targetRelay, upstream, redis, proxies, workers,
    async killProxy(i) {
      const proxy = proxies[i] as FleetProxy
      const pid = proxy.run.child.pid
      if (pid !== undefined) process.kill(-pid, 'SIGKILL')
      await proxy.run.exited
    },
    async restartProxy(i) {
      const proxy = proxies[i] as FleetProxy
      proxy.run = startProxy(t, proxy, awsEnv, options.drainDelaySeconds ?? 0)
      await proxy.run.waitForOutput('proxy listening', BOOT_TIMEOUT_MS)
    },
    mirroredByWorkers() {
      const out = new Set<string>()
      for (const worker of workers) {
        for (const line of worker.stdout().split('\n')) {
          if (!line.includes(MIRROR_JOB_MIRRORED)) continue
          const pkg = (JSON.parse(line) as { data?: { package?: string } }).data?.package
          if (pkg !== undefined) out.add(pkg)
        }
      }
      return out
    },
    async heldByTarget(name) {
      const res = await targetClient.request({ path: `/${name}`, method: 'GET' })
      const text = await res.body.text()
      if (res.statusCode !== 200) return false
      return (JSON.parse(text) as { versions?: Record<string, unknown> }).versions?.[VERSION] !== undefined
    },
    async enqueueCounts(i) {
      const proxy = proxies[i] as FleetProxy
      const res = await request(`http://127.0.0.1:${proxy.metricsPort}/metrics`)
      const text = await res.body.text()
      const out: Record<string, number> = {}
      for (const match of text.matchAll(/^service_mirror_enqueue_total\{[^}]*outcome="([a-z_]+)"[^}]*\} ([0-9.e+]+)/gm)) {
        out[match[1] as string] = (out[match[1] as string] ?? 0) + Number(match[2])
      }
      return out
    },
    memoryFailures(i) {
      return (proxies[i] as FleetProxy).run.stdout().split('\n').filter((line) => line.includes(MIRROR_ENQUEUE_MEMORY_FAILED)).length
    },
    async enqueueBacklog(i) {
      const proxy = proxies[i] as FleetProxy
      const res = await request(`http://127.0.0.1:${proxy.metricsPort}/metrics`)
      const value = /^service_mirror_enqueue_backlog(?:\{[^}]*\})? ([0-9.e+]+)/m.exec(await res.body.text())?.[1]
      if (value === undefined) throw new Error('service.mirror.enqueue.backlog is not exported')
      return Number(value)
    },
    async queueDepths() {
      const read = async (url: string): Promise<Record<string, string>> =>
        (await sqsClient.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }))).Attributes ?? {}
      const [work, dead] = await Promise.all([read(sqs.queueUrl), read(sqs.deadLetterQueueUrl)])
      // local-aws-sqs counts in-flight messages in ApproximateNumberOfMessages too (PEERS.md).
      const inFlight = Number(work['ApproximateNumberOfMessagesNotVisible'])
      return { visible: Number(work['ApproximateNumberOfMessages']) - inFlight, inFlight, deadLettered: Number(dead['ApproximateNumberOfMessages']) }
    },
  }
}

/** Why downloads got no answer, by error code, for a failing test's report. */
export const downloadErrors = new Map<string, number>()

/** Downloads `name`'s tarball through proxy port `port`; resolves with the status (0: no answer, counted in downloadErrors). */
export async function download(port: number, name: string): Promise<number> {
  try {
    const res = await request(`http://127.0.0.1:${port}/js${tarballPath(name)}`, { headersTimeout: 30_000, bodyTimeout: 30_000 })
    const body = Buffer.from(await res.body.arrayBuffer())
    if (res.statusCode === 200 && !body.equals(artifactBytes(name))) return -1
    return res.statusCode
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error)
    downloadErrors.set(code, (downloadErrors.get(code) ?? 0) + 1)
    return 0
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** Checks the target for each of `names`, 16 at a time; resolves with those it does not hold. */
export async function missingAtTarget(fleet: Fleet, names: readonly string[]): Promise<string[]> {
  const missing: string[] = []
  for (let i = 0; i < names.length; i += 16) {
    const batch = names.slice(i, i + 16)
    const held = await Promise.all(batch.map((name) => fleet.heldByTarget(name)))
    batch.forEach((name, k) => { if (!held[k]) missing.push(name) })
  }
  return missing
}
