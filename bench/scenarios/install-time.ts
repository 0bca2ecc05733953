/**
 * Install time of a real tree through the registries a team could put in
 * front of its CI fleet (issue 29, "Must show"; bench/INSTALL-TIME.md is the
 * user's guide). npm, pnpm and yarn classic each install the recorded
 * project (bench/tools/record-install-tree.ts: about 700 packages, real
 * packuments, local tarballs) from its lockfile, as CI runs them (`npm ci`,
 * `pnpm install --frozen-lockfile`, `yarn install --frozen-lockfile`), each
 * install in a fresh folder with a fresh cache and store, through:
 *
 * - direct: the "public registry" itself (nginx serving the recorded tree
 *   over https, bench/peers/public-fixture-registry.ts);
 * - verdaccio: Verdaccio 6 as a plain caching proxy of it, the peer a team
 *   would pick instead;
 * - proxy: this proxy (the built dist/), one process, whose private upstream
 *   is a Verdaccio that is also its mirror target and, as a team's private
 *   registry does, answers only requests bearing a token (`$authenticated`
 *   access and publish); the proxy holds one for both legs;
 * - fleet: three replicas of this proxy behind an nginx round-robin (one
 *   address), sharing that private Verdaccio and one SQS queue
 *   (local-aws-sqs) drained by one `service mirror` worker; each replica's
 *   cache is the shared backend on one redis-server ({@link fleetCache}).
 *
 * Phases, per setup and round: a fresh setup takes the first client's cold
 * install; once its mirror has finished what that install queued (the
 * proxy setups), every client installs warm from it, then each client
 * installs after a restart of every proxy process (for verdaccio: Verdaccio;
 * for direct: nginx), one restart per client so each install is the first
 * the restarted processes see. Every other client's cold install gets a
 * fresh setup of its own. Figures are the median wall time over the rounds.
 * The requests the private registry received during each install are
 * counted by a TCP relay in front of it (the proxy's private leg and its
 * mirror target both name the relay, one registry as a team runs it), and
 * the public side's by nginx's access log; the CPU seconds each party spent
 * are read from /proc.
 *
 * Env: BENCH_INSTALL_ROUNDS (default 1), BENCH_INSTALL_CLIENTS
 * (default npm,pnpm,yarn), BENCH_INSTALL_SETUPS (default
 * direct,verdaccio,proxy,fleet), BENCH_INSTALL_SETTLE_SECONDS (longest wait
 * for the mirror, default 600), BENCH_INSTALL_TREE_DIR (the recorded tree),
 * BENCH_INSTALL_FLEET_CACHE (`local`: the fleet without the shared backend).
 */
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs'
import YAML from 'yaml'
import { LOCKFILE_OF, QUARANTINE_SECONDS, lockfileFor, readTree, treeDir, type RecordedTree } from '../fixtures/install-tree.js'
import { treeCpuSeconds } from '../lib/cpu-time.js'
import { freePort, isUnavailable, startNginx, type NginxServer } from '../lib/nginx.js'
import { CLIENT_NAMES, clientCommand, installCommand, runCommand, type ClientName } from '../lib/package-clients.js'
import type { Measurement, Row, Scenario, ScenarioResult } from '../lib/scenario.js'
import { PublicFixtureRegistry, type PublicRequests } from '../peers/public-fixture-registry.js'
import { ServiceProcess } from '../peers/service-process.js'
import { startRedis, type RedisPeer } from '../peers/redis.js'
import { startSqs, type SqsPeer } from '../peers/sqs.js'
import { makeTestCa, type TestCa } from '../peers/tls.js'
import { startVerdaccio, type VerdaccioPeer } from '../peers/verdaccio.js'
import { CountingRelay, type WireExchange } from './install-bytes.js'

/**
 * The cache settings of every fleet replica: the one place that says which
 * metadata cache the tier runs. By default the shared backend on a
 * redis-server started for the fleet (docs/cache.md), with its default
 * settings; BENCH_INSTALL_FLEET_CACHE=local runs each replica on its own
 * local cache instead, for comparison.
 */
const FLEET_SHARED = process.env['BENCH_INSTALL_FLEET_CACHE'] !== 'local'
function fleetCache(redisUrl: string | undefined): Readonly<Record<string, unknown>> {
  return redisUrl === undefined ? {} : { backend: 'redis', url: redisUrl }
}

const ROUNDS = Math.max(1, Number(process.env['BENCH_INSTALL_ROUNDS'] ?? 1))
const REPLICAS = 3
/** The longest wait for the mirror to finish what a cold install queued. */
const SETTLE_MAX_MS = Number(process.env['BENCH_INSTALL_SETTLE_SECONDS'] ?? 600) * 1000
/** The mirror counts as done once neither registry has seen a byte for this long (and the SQS queue is empty). */
const SETTLE_QUIET_MS = 5000
const INSTALL_TIMEOUT_MS = 15 * 60_000

export type SetupName = 'direct' | 'verdaccio' | 'proxy' | 'fleet'
export const SETUP_NAMES: readonly SetupName[] = ['direct', 'verdaccio', 'proxy', 'fleet']
export type PhaseName = 'cold' | 'warm' | 'after restart'
export const PHASES: readonly PhaseName[] = ['cold', 'warm', 'after restart']

function listFromEnv<T extends string>(key: string, known: readonly T[]): T[] {
  const value = process.env[key]
  if (value === undefined || value.trim() === '') return [...known]
  const chosen = value.split(',').map((s) => s.trim()).filter((s) => s !== '')
  const unknown = chosen.filter((s) => !known.includes(s as T))
  if (unknown.length > 0) throw new Error(`${key}: unknown ${unknown.join(', ')} (known: ${known.join(', ')})`)
  return chosen as T[]
}

// ---------------------------------------------------------------------------
// What the private registry was asked

/** The requests the private registry received during one window, by kind. */
export interface PrivateRequests {
  readonly total: number
  /** The proxy's private leg: packument reads by status, tarball reads by status. */
  readonly packuments: Readonly<Record<string, number>>
  readonly tarballs: Readonly<Record<string, number>>
  /** The mirror worker: its look-ups of the target (abbreviated form) and its publishes. */
  readonly mirrorLookups: number
  readonly publishes: number
  readonly other: number
}

const ABBREVIATED = 'application/vnd.npm.install-v1+json'

export function classifyPrivate(exchanges: readonly WireExchange[]): PrivateRequests {
  const packuments: Record<string, number> = {}
  const tarballs: Record<string, number> = {}
  let mirrorLookups = 0
  let publishes = 0
  let other = 0
  for (const e of exchanges) {
    const path = e.path.split('?')[0] ?? ''
    if (e.method === 'PUT' && !path.startsWith('/-/')) publishes++
    else if (e.method !== 'GET' && e.method !== 'HEAD') other++
    else if (path.startsWith('/-/')) other++
    else if (path.includes('/-/') && path.endsWith('.tgz')) tarballs[e.status] = (tarballs[e.status] ?? 0) + 1
    else if (e.accept?.includes(ABBREVIATED) === true) mirrorLookups++
    else packuments[e.status] = (packuments[e.status] ?? 0) + 1
  }
  return { total: exchanges.length, packuments, tarballs, mirrorLookups, publishes, other }
}

function describePrivate(p: PrivateRequests): string {
  const byStatus = (counts: Readonly<Record<string, number>>): string => Object.entries(counts).map(([s, n]) => `${n}x${s}`).join(' ') || '0'
  return `${p.total} requests: packuments ${byStatus(p.packuments)}, tarballs ${byStatus(p.tarballs)}, mirror look-ups ${p.mirrorLookups}, publishes ${p.publishes}${p.other > 0 ? `, other ${p.other}` : ''}`
}

function describePublic(p: PublicRequests): string {
  return `packuments ${p.full} full + ${p.abbreviated} abbreviated + ${p.notModified} 304, tarballs ${p.tarballs}${p.notFound > 0 ? `, 404 ${p.notFound}` : ''}, ${(p.bytes / 1e6).toFixed(1)} MB`
}

// ---------------------------------------------------------------------------
// The setups

interface Setup {
  /** The registry URL clients install from, with its trailing slash. */
  readonly registry: string
  /** A CA the clients must trust (the https public registry). */
  readonly caFile?: string
  /** The relay in front of the private registry, for the proxy setups. */
  readonly privateRelay?: CountingRelay
  /** CPU seconds so far of the setup's own processes, by party. */
  cpu(): Promise<Record<string, number>>
  /** Waits until the mirror has nothing left to do; undefined when the setup has no mirror. */
  settle(): Promise<{ seconds: number, settled: boolean } | undefined>
  /** Restarts every proxy process (for verdaccio: Verdaccio; for direct: the public registry's nginx). */
  restart(): Promise<void>
  stop(): Promise<void>
}

interface Shared {
  readonly tree: RecordedTree
  readonly ca: TestCa
  readonly publicRegistry: PublicFixtureRegistry
}

/** The proxy's mount: the public fixture over https, the private Verdaccio through the relay as upstream and mirror target. */
function jsMount(shared: Shared, relay: CountingRelay, token: string): Record<string, unknown> {
  const privateUrl = `${relay.origin}/`
  return {
    js: {
      upstreams: {
        private: { url: privateUrl, token },
        public: { url: shared.publicRegistry.url, caFile: shared.ca.caFile, allowInternalRanges: ['127.0.0.0/8'] },
      },
      mirror: { target: privateUrl, token },
      // The shipped seven-day quarantine without the advisory rules: with no advisory database they would
      // keep /readyz at awaiting_advisory_database. The tree was resolved from versions at least this old.
      rules: [{ rule: 'AllowIfOlderThan', seconds: QUARANTINE_SECONDS }],
    },
  }
}

/** A private registry as a team runs one: every read and write needs a user's token. */
async function startPrivateRegistry(): Promise<{ verdaccio: VerdaccioPeer, relay: CountingRelay, token: string }> {
  const authenticated = { access: '$authenticated', publish: '$authenticated', unpublish: '$authenticated' }
  const verdaccio = await startVerdaccio({ role: 'private', packages: { '@*/*': authenticated, '**': authenticated } })
  try {
    const token = await verdaccio.addUser('registry-proxy', 'registry-proxy-password')
    const relay = await CountingRelay.start(verdaccio.port)
    return { verdaccio, relay, token }
  } catch (error) {
    await verdaccio.stop()
    throw error
  }
}

async function quiet(relay: CountingRelay, publicRegistry: PublicFixtureRegistry, extra: () => Promise<boolean>): Promise<{ seconds: number, settled: boolean }> {
  const started = performance.now()
  let publicQuietSince = performance.now()
  let logged = await publicRegistry.loggedBytes()
  while (performance.now() - started < SETTLE_MAX_MS) {
    await sleep(500)
    const now = await publicRegistry.loggedBytes()
    if (now !== logged) publicQuietSince = performance.now()
    logged = now
    const at = performance.now()
    if (at - relay.lastActivityAt >= SETTLE_QUIET_MS && at - publicQuietSince >= SETTLE_QUIET_MS && await extra()) {
      return { seconds: (Math.max(relay.lastActivityAt, publicQuietSince) - started) / 1000, settled: true }
    }
  }
  return { seconds: (performance.now() - started) / 1000, settled: false }
}

async function startDirect(shared: Shared): Promise<Setup> {
  return {
    registry: shared.publicRegistry.url,
    caFile: shared.ca.caFile,
    cpu: async () => ({ 'public registry': await treeCpuSeconds(shared.publicRegistry.pid) }),
    settle: async () => undefined,
    restart: () => shared.publicRegistry.restart(),
    stop: async () => {},
  }
}

async function startCachingVerdaccio(shared: Shared): Promise<Setup> {
  const proxied = { access: '$all', publish: '$authenticated', unpublish: '$authenticated', proxy: 'public' }
  const verdaccio = await startVerdaccio({
    role: 'private',
    uplinks: { public: { url: shared.publicRegistry.url, timeout: '60s' } },
    packages: { '@*/*': proxied, '**': proxied },
    // Verdaccio's uplink trusts the bench CA the way a team would make it trust a private CA.
    env: { NODE_EXTRA_CA_CERTS: shared.ca.caFile },
  })
  return {
    registry: verdaccio.url,
    cpu: async () => ({ verdaccio: await treeCpuSeconds(verdaccio.pid) }),
    settle: async () => undefined,
    restart: () => verdaccio.restart(),
    stop: () => verdaccio.stop(),
  }
}

async function startProxy(shared: Shared, dir: string): Promise<Setup> {
  const { verdaccio, relay, token } = await startPrivateRegistry()
  let proxy: ServiceProcess | undefined
  try {
    const port = await freePort()
    const config = join(dir, 'proxy.yaml')
    await writeFile(config, YAML.stringify({
      server: { host: '127.0.0.1', port, baseUrl: `http://127.0.0.1:${port}`, shutdownDrainTimeout: 10 },
      runtime: { cores: 1 },
      observability: { logLevel: 'warn' },
      queue: { path: join(dir, 'queue') },
      store: { path: join(dir, 'store') },
      // Kept upstream documents survive the restart phase (docs/cache.md "Warm restarts on the local backend").
      cache: { warmPath: join(dir, 'warm') },
      mounts: jsMount(shared, relay, token),
    }))
    const started = proxy = await ServiceProcess.start('proxy', config, port)
    return {
      registry: `http://127.0.0.1:${port}/js/`,
      privateRelay: relay,
      cpu: async () => ({ proxy: await treeCpuSeconds(started.pid), 'private verdaccio': await treeCpuSeconds(verdaccio.pid) }),
      settle: () => quiet(relay, shared.publicRegistry, async () => true),
      restart: () => started.restart(),
      stop: async () => {
        await started.stop()
        await relay.close()
        await verdaccio.stop()
      },
    }
  } catch (error) {
    await proxy?.stop()
    await relay.close()
    await verdaccio.stop()
    throw error
  }
}

async function sqsIdle(sqs: SqsPeer, client: SQSClient): Promise<boolean> {
  const out = await client.send(new GetQueueAttributesCommand({ QueueUrl: sqs.queueUrl, AttributeNames: ['All'] }))
  // local-aws-sqs counts in-flight messages in ApproximateNumberOfMessages too (PEERS.md).
  return Number(out.Attributes?.['ApproximateNumberOfMessages'] ?? 1) === 0 && Number(out.Attributes?.['ApproximateNumberOfMessagesNotVisible'] ?? 1) === 0
}

/**
 * The fleet's queue is SQS with a dedicated `service mirror` worker: the
 * README's choice for several proxies (the embedded queue belongs to one
 * process and its worker runs inside it, so three replicas would mirror
 * from three journals, de-duplicating nothing between them).
 */
async function startFleet(shared: Shared, dir: string): Promise<Setup> {
  const { verdaccio, relay, token } = await startPrivateRegistry()
  const services: ServiceProcess[] = []
  let sqs: SqsPeer | undefined
  let nginx: NginxServer | undefined
  let redis: RedisPeer | undefined
  try {
    const queue = sqs = await startSqs({ maxReceiveCount: 5 })
    // The redis peer's own teardown list is unused: the setup's stop ends it.
    if (FLEET_SHARED) redis = await startRedis({ teardown: () => undefined })
    const cache = fleetCache(redis?.url)
    const sqsClient = queue.client()
    const ports = await Promise.all(Array.from({ length: REPLICAS }, () => freePort()))
    const frontPort = await freePort()
    const frontOrigin = `http://127.0.0.1:${frontPort}`
    const awsEnv = { AWS_ACCESS_KEY_ID: queue.accessKeyId, AWS_SECRET_ACCESS_KEY: queue.secretAccessKey, AWS_REGION: queue.region }
    const configOf = async (name: string, port: number): Promise<string> => {
      const file = join(dir, `${name}.yaml`)
      await writeFile(file, YAML.stringify({
        server: { host: '127.0.0.1', port, baseUrl: frontOrigin, shutdownDrainTimeout: 10 },
        runtime: { cores: 1 },
        observability: { logLevel: 'warn' },
        // Each replica its own folder of kept documents (one owner per folder; used while the fleet runs on the local backend).
        cache: { warmPath: join(dir, `${name}-warm`), ...cache },
        queue: { kind: 'sqs', url: queue.queueUrl, region: queue.region, endpoint: queue.endpoint },
        store: { path: join(dir, `${name}-store`) },
        mounts: jsMount(shared, relay, token),
      }))
      return file
    }
    const replicaConfigs = await Promise.all(ports.map((port, i) => configOf(`replica-${i + 1}`, port)))
    const workerPort = await freePort()
    const workerConfig = await configOf('mirror', workerPort)
    services.push(...await Promise.all(replicaConfigs.map((config, i) => ServiceProcess.start('proxy', config, ports[i] as number, awsEnv))))
    services.push(await ServiceProcess.start('mirror', workerConfig, workerPort, awsEnv))
    // Only once the replicas answer: nginx takes a replica it cannot reach out of rotation for 10 s (max_fails=1).
    const started = await startNginx({ kind: 'relay', origin: ports.map((p) => `http://127.0.0.1:${p}`) }, { port: frontPort })
    if (isUnavailable(started)) throw new Error(`the fleet's round-robin cannot run: ${started.unavailable}`)
    const front = nginx = started
    return {
      registry: `${front.origin}/js/`,
      privateRelay: relay,
      cpu: async () => {
        let replicas = 0
        for (const s of services.slice(0, REPLICAS)) replicas += await treeCpuSeconds(s.pid)
        return { proxy: replicas, 'mirror worker': await treeCpuSeconds((services[REPLICAS] as ServiceProcess).pid), nginx: await treeCpuSeconds(front.pid), 'private verdaccio': await treeCpuSeconds(verdaccio.pid) }
      },
      settle: () => quiet(relay, shared.publicRegistry, () => sqsIdle(queue, sqsClient)),
      restart: async () => { await Promise.all(services.map((s) => s.restart())) },
      stop: async () => {
        await Promise.all(services.map((s) => s.stop()))
        await front.stop()
        await queue.stop()
        await redis?.stop()
        await relay.close()
        await verdaccio.stop()
      },
    }
  } catch (error) {
    await Promise.all(services.map((s) => s.stop()))
    await nginx?.stop()
    await sqs?.stop()
    await redis?.stop()
    await relay.close()
    await verdaccio.stop()
    throw error
  }
}

async function startSetup(name: SetupName, shared: Shared, dir: string): Promise<Setup> {
  switch (name) {
    case 'direct': return startDirect(shared)
    case 'verdaccio': return startCachingVerdaccio(shared)
    case 'proxy': return startProxy(shared, dir)
    case 'fleet': return startFleet(shared, dir)
  }
}

// ---------------------------------------------------------------------------
// One install

/** The lockfile install CI runs, in a fresh folder with a fresh cache; throws when it fails or leaves a root dependency out. */
async function installOnce(client: ClientName, command: string, tree: RecordedTree, setup: Setup): Promise<number> {
  const root = await mkdtemp(join(tmpdir(), `bench-install-time-${client}-`))
  try {
    const project = join(root, 'project')
    await Promise.all([mkdir(project), mkdir(join(root, 'home')), mkdir(join(root, 'cache'))])
    await writeFile(join(project, 'package.json'), tree.packageJson)
    const lockfile = LOCKFILE_OF[client]
    await writeFile(join(project, lockfile), lockfileFor(tree.lockfiles[lockfile], tree.manifest.recordOrigin, setup.registry))
    const { args, env } = await installCommand(client, root, project, setup.registry, { frozenLockfile: true, ...(setup.caFile === undefined ? {} : { caFile: setup.caFile }) })
    const run = await runCommand(command, args, project, env, INSTALL_TIMEOUT_MS)
    if (run.exitCode !== 0) throw new Error(`${client} ${run.signal === null ? `exited ${run.exitCode}` : `was killed by ${run.signal}`}:\n${run.output}`)
    const manifest = JSON.parse(tree.packageJson) as { dependencies?: Record<string, string>, devDependencies?: Record<string, string> }
    for (const name of [...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.devDependencies ?? {})]) {
      if (!existsSync(join(project, 'node_modules', ...name.split('/'), 'package.json'))) throw new Error(`${client} exited 0 but did not install ${name}:\n${run.output}`)
    }
    return run.seconds
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

/** One measured install: its wall time (NaN when it failed), what the private and public registries were asked, CPU by party. */
interface PhaseResult {
  readonly seconds: number
  readonly failure?: string
  readonly privateRequests?: PrivateRequests
  readonly publicRequests: PublicRequests
  readonly cpu: Readonly<Record<string, number>>
}

async function measurePhase(client: ClientName, command: string, shared: Shared, setup: Setup): Promise<PhaseResult> {
  setup.privateRelay?.take()
  await shared.publicRegistry.take()
  const before = await setup.cpu()
  let seconds = NaN
  let failure: string | undefined
  try {
    seconds = await installOnce(client, command, shared.tree, setup)
  } catch (error) {
    failure = error instanceof Error ? error.message : String(error)
  }
  const after = await setup.cpu()
  const cpu: Record<string, number> = {}
  for (const [party, s] of Object.entries(after)) cpu[party] = s - (before[party] ?? 0)
  const exchanges = setup.privateRelay?.take().exchanges
  return {
    seconds,
    ...(failure === undefined ? {} : { failure }),
    ...(exchanges === undefined ? {} : { privateRequests: classifyPrivate(exchanges) }),
    publicRequests: await shared.publicRegistry.take(),
    cpu,
  }
}

interface Settle {
  readonly seconds: number
  readonly settled: boolean
  readonly privateRequests?: PrivateRequests
  readonly publicRequests: PublicRequests
}

/** Every measured install by `<client> <setup>` and phase (one per round), and each round's wait for the mirror by setup. */
export interface Tally {
  readonly installs: Map<string, Record<PhaseName, PhaseResult[]>>
  readonly settles: Map<SetupName, Settle[]>
}

const key = (client: ClientName, setup: SetupName): string => `${client} ${setup}`

function record(tally: Tally, client: ClientName, setup: SetupName, phase: PhaseName, result: PhaseResult): void {
  let phases = tally.installs.get(key(client, setup))
  if (phases === undefined) tally.installs.set(key(client, setup), phases = { cold: [], warm: [], 'after restart': [] })
  phases[phase].push(result)
  console.log(`install-time: ${setup} ${client} ${phase}: ${Number.isFinite(result.seconds) ? `${result.seconds.toFixed(1)} s` : 'FAILED'}${result.privateRequests === undefined ? '' : `, ${result.privateRequests.total} private requests`}`
    + (result.failure === undefined ? '' : `\n${result.failure.slice(-2000)}`))
}

async function withSetup(name: SetupName, shared: Shared, body: (setup: Setup) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), `bench-install-time-${name}-`))
  try {
    const setup = await startSetup(name, shared, dir)
    try {
      await body(setup)
    } finally {
      await setup.stop()
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/**
 * One round of one setup. The first client's cold install fills a fresh
 * setup; once its mirror has nothing left to do, every client installs warm
 * from it, then every client installs after a restart of its own (so each
 * is the first install the restarted processes see). Every other client's
 * cold install gets a fresh setup of its own, stopped after it.
 */
async function measureSetup(name: SetupName, clients: readonly ClientName[], commands: ReadonlyMap<ClientName, string>, shared: Shared, tally: Tally): Promise<void> {
  const [first, ...others] = clients
  if (first === undefined) return
  const measure = (client: ClientName, setup: Setup): Promise<PhaseResult> => measurePhase(client, commands.get(client) as string, shared, setup)
  await withSetup(name, shared, async (setup) => {
    record(tally, first, name, 'cold', await measure(first, setup))
    const settled = await setup.settle()
    if (settled !== undefined) {
      const settle: Settle = {
        ...settled,
        ...(setup.privateRelay === undefined ? {} : { privateRequests: classifyPrivate(setup.privateRelay.take().exchanges) }),
        publicRequests: await shared.publicRegistry.take(),
      }
      tally.settles.set(name, [...(tally.settles.get(name) ?? []), settle])
      console.log(`install-time: ${name} mirror ${settle.settled ? 'settled' : 'did NOT settle'} in ${settle.seconds.toFixed(0)} s`)
    }
    for (const client of clients) record(tally, client, name, 'warm', await measure(client, setup))
    for (const client of clients) {
      await setup.restart()
      record(tally, client, name, 'after restart', await measure(client, setup))
    }
  })
  for (const client of others) {
    await withSetup(name, shared, async (setup) => record(tally, client, name, 'cold', await measure(client, setup)))
  }
}

// ---------------------------------------------------------------------------
// The report

export function median(values: readonly number[]): number {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b)
  if (sorted.length === 0 || sorted.length < values.length) return NaN
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid] as number : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

const secondsOf = (value: number): Measurement => ({ unit: 's', better: 'lower', value })

/** The goal of a proxy setup's row (issue 29): cold at most 1.2x Verdaccio cold; warm and after a restart at most Verdaccio warm. */
export function goalOf(phase: PhaseName): Row['goal'] {
  return phase === 'cold'
    ? { baseline: 'verdaccio', goodness: 1 / 1.2, text: '<= 1.2x verdaccio cold' }
    : { baseline: phase === 'warm' ? 'verdaccio' : 'verdaccio warm', goodness: 1, text: '<= 1.0x verdaccio warm' }
}

function timeRows(tally: Tally, clients: readonly ClientName[], setups: readonly SetupName[]): Row[] {
  const rows: Row[] = []
  const figure = (client: ClientName, setup: SetupName, phase: PhaseName): Measurement | string => {
    const runs = tally.installs.get(key(client, setup))
    if (runs === undefined) return 'not measured (BENCH_INSTALL_SETUPS)'
    return secondsOf(median(runs[phase].map((r) => r.seconds)))
  }
  for (const client of clients) {
    for (const setup of setups) {
      for (const phase of PHASES) {
        const baselines: Record<string, Measurement | string> = {}
        if (setup !== 'direct') baselines['direct'] = figure(client, 'direct', phase)
        if (setup !== 'verdaccio') baselines['verdaccio'] = figure(client, 'verdaccio', phase)
        const isProxy = setup === 'proxy' || setup === 'fleet'
        if (isProxy && phase === 'after restart') baselines['verdaccio warm'] = figure(client, 'verdaccio', 'warm')
        const project = figure(client, setup, phase)
        rows.push({
          metric: `${client} ${setup} ${phase}`,
          project: typeof project === 'string' ? secondsOf(NaN) : project,
          baselines,
          ...(isProxy ? { goal: goalOf(phase) } : {}),
        })
      }
    }
  }
  return rows
}

function requestRows(tally: Tally, clients: readonly ClientName[], setups: readonly SetupName[]): Row[] {
  const rows: Row[] = []
  for (const client of clients) {
    for (const setup of setups.filter((s) => s === 'proxy' || s === 'fleet')) {
      const runs = tally.installs.get(key(client, setup))
      if (runs === undefined) continue
      for (const phase of PHASES) {
        const value = median(runs[phase].map((r) => r.privateRequests?.total ?? NaN))
        const cold = median(runs.cold.map((r) => r.privateRequests?.total ?? NaN))
        rows.push({
          metric: `${client} ${setup} ${phase}: private registry requests per install`,
          project: { unit: 'req', better: 'lower', value },
          baselines: phase === 'cold' ? {} : { 'same setup cold': { unit: 'req', better: 'lower', value: cold } },
        })
      }
    }
  }
  return rows
}

function notesOf(tally: Tally, shared: Shared, clients: readonly ClientName[], setups: readonly SetupName[]): string[] {
  const { tree } = shared
  const manifest = JSON.parse(tree.packageJson) as { dependencies?: Record<string, string>, devDependencies?: Record<string, string> }
  const roots = [...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.devDependencies ?? {})]
  const notes = [
    `tree: ${roots.join(', ')}; ${tree.manifest.packages.length} packuments recorded ${tree.manifest.recordedAt} (versions published before ${tree.manifest.cutoff}), ${shared.publicRegistry.tarballs} locked tarballs made locally; lockfiles by npm ${tree.manifest.clients['npm']}, pnpm ${tree.manifest.clients['pnpm']}, yarn ${tree.manifest.clients['yarn']}`,
    `installs: npm ci, pnpm install --frozen-lockfile, yarn install --frozen-lockfile; each in a fresh folder with a fresh cache and store; fetch-retries=0 where the client has it; ${ROUNDS} round(s), median wall time`,
    `phases: cold = every registry process and store fresh; warm = the setup ${clients[0] ?? ''}'s cold install filled (for the proxy setups once the mirror has finished what it queued); after restart = every proxy process (verdaccio: Verdaccio; direct: nginx) restarted before each install, stores kept`,
    `proxy and fleet: runtime.cores 1 per process, rules [AllowIfOlderThan ${QUARANTINE_SECONDS} s] (no advisory database), private upstream and mirror target the same token-requiring Verdaccio; fleet: ${REPLICAS} replicas behind nginx round-robin, SQS + one service mirror, replica cache ${FLEET_SHARED ? 'the shared backend (cache.backend redis, a redis-server for the fleet, default settings)' : 'local (BENCH_INSTALL_FLEET_CACHE=local: each replica its own)'}`,
    'the machine is 2 cores shared with other work: wall times are noisy; request counts are not',
  ]
  for (const setup of setups) {
    for (const client of clients) {
      const runs = tally.installs.get(key(client, setup))
      for (const phase of PHASES) {
        runs?.[phase].forEach((p, round) => {
          const cpu = Object.entries(p.cpu).map(([party, s]) => `${party} ${s.toFixed(1)}`).join(', ')
          notes.push(`${client} ${setup} ${phase} r${round + 1}: ${Number.isFinite(p.seconds) ? `${p.seconds.toFixed(1)} s` : 'FAILED'}; `
            + `${p.privateRequests === undefined ? '' : `private ${describePrivate(p.privateRequests)}; `}public ${describePublic(p.publicRequests)}; CPU s ${cpu}`
            + (p.failure === undefined ? '' : `; failure: ${p.failure.slice(-600).replace(/\s+/g, ' ')}`))
        })
      }
    }
    tally.settles.get(setup)?.forEach((settle, round) => {
      notes.push(`${setup} mirror after ${clients[0] ?? ''}'s cold install r${round + 1}: ${settle.settled ? 'settled' : 'NOT settled'} in ${settle.seconds.toFixed(0)} s; `
        + `${settle.privateRequests === undefined ? '' : `private ${describePrivate(settle.privateRequests)}; `}public ${describePublic(settle.publicRequests)}`)
    })
  }
  return notes
}

const scenario: Scenario = {
  name: 'install-time',
  async run(): Promise<ScenarioResult> {
    const clients = listFromEnv('BENCH_INSTALL_CLIENTS', CLIENT_NAMES)
    const setups = listFromEnv('BENCH_INSTALL_SETUPS', SETUP_NAMES)
    const dir = treeDir()
    if (!existsSync(join(dir, 'tree.json'))) {
      throw new Error(`no recorded tree in ${dir}: record one first (once, on a machine that reaches the public registry) with \`npm run build && node dist/bench/tools/record-install-tree.js\` (bench/INSTALL-TIME.md)`)
    }
    const tree = await readTree(dir)
    const commands = new Map<ClientName, string>()
    for (const client of clients) {
      const command = clientCommand(client)
      if (typeof command !== 'string') throw new Error(`${client}: ${command.unavailable}`)
      commands.set(client, command)
    }
    const ca = await makeTestCa()
    let publicRegistry: PublicFixtureRegistry | string | undefined
    try {
      const layoutStarted = performance.now()
      publicRegistry = await PublicFixtureRegistry.start(tree, ca)
      if (typeof publicRegistry === 'string') throw new Error(`the public registry cannot run: ${publicRegistry}`)
      const layout = (performance.now() - layoutStarted) / 1000
      const shared: Shared = { tree, ca, publicRegistry }
      const tally: Tally = { installs: new Map(), settles: new Map() }
      for (let round = 0; round < ROUNDS; round++) {
        for (const setup of setups) await measureSetup(setup, clients, commands, shared, tally)
      }
      return {
        title: `Lockfile installs of a recorded ${tree.manifest.packages.length}-package tree: npm, pnpm and yarn classic, direct / Verdaccio caching proxy / this proxy / ${REPLICAS} replicas, cold, warm and after a restart`,
        rows: [...timeRows(tally, clients, setups), ...requestRows(tally, clients, setups)],
        notes: [...notesOf(tally, shared, clients, setups), `the public registry was laid out in ${layout.toFixed(0)} s (not timed)`],
      }
    } finally {
      if (publicRegistry !== undefined && typeof publicRegistry !== 'string') await publicRegistry.stop()
      await ca.remove()
    }
  },
}

export default scenario
