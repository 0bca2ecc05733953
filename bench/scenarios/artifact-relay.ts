/**
 * The artifact relay (SPEC.md 1.3, 4.4, 4.4a; PEERS.md "Baseline"): MB/s and
 * p99 latency of cold artifact GETs of 1 MiB and 10 MiB at 1, 8 and 64
 * concurrent clients through the proxy's artifact route (private leg,
 * streaming every request from a local plain-http origin), against nginx
 * relaying to the same origin (tuned: proxy_buffering off, 256k buffers, a
 * keep-alive upstream pool) and against Verdaccio serving the same tarballs
 * from its storage; the origin asked directly is printed beside them as the
 * load tool's ceiling. Then the proxy's RSS while 64 slow clients read 10 MiB
 * artifacts (target: growth under 64 MiB).
 *
 * The origin is nginx serving the files statically, the fastest origin at
 * hand, so the relays are what is measured. The proxy runs in a process of
 * its own (bench/runners/artifact-relay-server.ts); the load comes from a
 * third (wrk, else autocannon). BENCH_DURATION_SECONDS sizes each run
 * (default 8 s after a 2 s warm-up); the proxy and the nginx relay are
 * measured in BENCH_RELAY_ROUNDS alternating rounds (default 5: on a shared
 * 2-core machine one round of either server swings by a third, so three
 * left the median to one lucky or unlucky run). Throughput is the median of
 * the rounds; the p99 is that of every request of the rounds pooled.
 *
 * RSS across the run (issue 18: "RSS flat across the run"): after each point
 * the resident set (VmRSS, not the high-water mark) of the proxy and of the
 * nginx relay's processes is printed, and the proxy's drift from the first
 * point at full concurrency to the end of the throughput runs is held to
 * one read buffer per connection (64 x 256 KiB).
 *
 * BENCH_RELAY_POINTS=<labels> measures only the points named, comma
 * separated as the rows name them (`10 MiB x64,1 MiB x8`), for a quick A/B
 * of two builds at the points that differ; the RSS rows then cover only those.
 *
 * BENCH_RELAY_CPU_PROF=<dir> runs the throughput relay process under
 * `--cpu-prof`, its profile written to that folder when the scenario ends.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startVerdaccio, type VerdaccioPeer } from '../peers/verdaccio.js'
import { fetchBytes, measureServer, type LoadShape } from '../lib/baselines.js'
import { defaultLoadTool } from '../lib/load.js'
import { loadWarnings, type MeasuredServer } from '../lib/load-rows.js'
import { figuresOf, median, perRound, type RoundFigures } from '../lib/round-figures.js'
import { isUnavailable, startNginx, type NginxServer } from '../lib/nginx.js'
import { peakRssBytes, rssBytes, treeRssBytes } from '../lib/peak-rss.js'
import { startRelay, type RelayProcess } from '../lib/relay-process.js'
import type { Measurement, Row, Scenario, ScenarioResult } from '../lib/scenario.js'

const MIB = 1024 * 1024
const MB = 1_000_000
const SIZES = [{ label: '1 MiB', bytes: MIB }, { label: '10 MiB', bytes: 10 * MIB }] as const
const CONCURRENCY = [1, 8, 64] as const
const SLOW_CLIENTS = 64
/** Each slow client reads about this many bytes per second. */
const SLOW_RATE = 512 * 1024
const SLOW_SECONDS = 8
const RSS_TARGET_GROWTH = 64 * MIB
/** The proxy's RSS drift over the throughput runs: one 256 KiB read buffer for each of 64 connections. */
const RSS_TARGET_DRIFT = 16 * MIB

interface Artifact { readonly label: string, readonly bytes: number, readonly name: string, readonly file: string, readonly body: Buffer }

function artifactPath(a: Artifact): string {
  return `/${a.name}/-/${a.file}`
}

/**
 * `clients` raw connections each asking for `path` over and over and reading
 * at about SLOW_RATE bytes per second, for `seconds`; samples the server's
 * RSS every 100 ms. Returns the baseline (before) and the peak RSS seen.
 */
async function slowClients(origin: string, path: string, pid: number, clients: number, seconds: number): Promise<{ before: number, peak: number, bytes: number }> {
  const url = new URL(origin)
  const before = (await rssBytes(pid)) ?? 0
  let peak = before
  let bytes = 0
  const sockets = new Set<import('node:net').Socket>()
  const sampler = setInterval(() => {
    void rssBytes(pid).then((rss) => { if (rss !== undefined && rss > peak) peak = rss })
  }, 100)
  const tick = 50
  const perTick = Math.max(1, Math.floor(SLOW_RATE * tick / 1000))
  for (let i = 0; i < clients; i++) {
    const socket = connect(Number(url.port), url.hostname)
    sockets.add(socket)
    socket.on('error', () => {})
    socket.write(`GET ${url.pathname}${path} HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`)
    // Reads a budget per tick, then pauses: the kernel buffers fill and TCP holds the server.
    let budget = perTick
    socket.on('data', (chunk: Buffer) => {
      bytes += chunk.byteLength
      budget -= chunk.byteLength
      if (budget <= 0) socket.pause()
    })
    const refill = setInterval(() => {
      budget = perTick
      socket.resume()
    }, tick)
    socket.on('close', () => clearInterval(refill))
  }
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
  clearInterval(sampler)
  for (const s of sockets) s.destroy()
  const last = await rssBytes(pid)
  if (last !== undefined && last > peak) peak = last
  return { before, peak, bytes }
}

function measurement(unit: string, better: 'higher' | 'lower', value: number): Measurement {
  return { unit, better, value }
}

const scenario: Scenario = {
  name: 'artifact-relay',
  async run(): Promise<ScenarioResult> {
    const duration = Number(process.env.BENCH_DURATION_SECONDS ?? 8)
    const rounds = Math.max(1, Math.floor(Number(process.env.BENCH_RELAY_ROUNDS ?? 5)))
    const points = process.env.BENCH_RELAY_POINTS?.split(',').map((p) => p.trim()).filter((p) => p !== '')
    const root = await mkdtemp(join(tmpdir(), 'bench-artifacts-'))
    const notes: string[] = []
    const rows: Row[] = []
    let origin: NginxServer | undefined
    let nginxRelay: NginxServer | string = 'not started'
    let verdaccio: VerdaccioPeer | string = 'not started'
    let relay: RelayProcess | undefined
    try {
      const artifacts: Artifact[] = SIZES.map((s, i) => ({
        ...s, name: `bench-artifact-${i}`, file: `bench-artifact-${i}-1.0.0.tgz`, body: randomBytes(s.bytes),
      }))
      for (const a of artifacts) {
        await mkdir(join(root, a.name, '-'), { recursive: true })
        await writeFile(join(root, a.name, '-', a.file), a.body)
      }
      const started = await startNginx({ kind: 'static', root, defaultType: 'application/octet-stream' })
      if (isUnavailable(started)) throw new Error(`the origin cannot run: ${started.unavailable}`)
      origin = started
      relay = await startRelay(origin.origin, process.env.BENCH_RELAY_CPU_PROF)
      const relayNginx = await startNginx({ kind: 'relay', origin: origin.origin })
      nginxRelay = isUnavailable(relayNginx) ? relayNginx.unavailable : relayNginx
      try {
        const v = await startVerdaccio({ role: 'private' })
        for (const a of artifacts) {
          // Verdaccio's local storage: the document beside its tarball file.
          await mkdir(join(v.storageDir, a.name), { recursive: true })
          await writeFile(join(v.storageDir, a.name, 'package.json'), JSON.stringify({
            name: a.name, versions: { '1.0.0': { name: a.name, version: '1.0.0', dist: { tarball: `${v.origin}${artifactPath(a)}` } } },
            'dist-tags': { latest: '1.0.0' }, time: {}, _rev: '1-0', _attachments: { [a.file]: { shasum: '' } }, _uplinks: {}, _distfiles: {},
          }))
          await writeFile(join(v.storageDir, a.name, a.file), a.body)
        }
        verdaccio = v
      } catch (error) {
        verdaccio = `verdaccio did not start: ${String(error)}`
      }

      // Every server must answer with exactly the artifact's bytes before it is measured.
      const servers: Record<string, { base: string, pid: number } | string> = {
        proxy: { base: relay.origin, pid: relay.pid },
        'nginx relay': typeof nginxRelay === 'string' ? nginxRelay : { base: nginxRelay.origin, pid: nginxRelay.pid },
        verdaccio: typeof verdaccio === 'string' ? verdaccio : { base: verdaccio.origin, pid: verdaccio.pid },
        // The origin itself, asked directly: what the load tool reaches with no relay in
        // the way. Where a relay comes close to it, the tool, not the relay, is the limit.
        origin: { base: origin.origin, pid: origin.pid },
      }
      for (const [name, server] of Object.entries(servers)) {
        if (typeof server === 'string') continue
        for (const a of artifacts) {
          const check = await fetchBytes(`${server.base}${artifactPath(a)}`)
          if (check.status !== 200 || !check.body.equals(a.body)) {
            if (name === 'proxy') throw new Error(`the proxy answered ${check.status} with other bytes for ${a.file}`)
            servers[name] = `${name} answered ${check.status} with other bytes for ${a.file}`
            break
          }
        }
      }

      /** The proxy's VmRSS after each point, for the drift row. */
      const proxyRss: { label: string, connections: number, bytes: number }[] = []
      // The proxy and the nginx relay are measured in alternating rounds (their order
      // swapped each round) and each is given its median: on a shared machine the
      // background load drifts within a minute, and one run each would credit or
      // blame whichever server ran during a quiet or a busy spell.
      for (const a of artifacts) {
        for (const connections of CONCURRENCY) {
          const shape: LoadShape = { connections, durationSeconds: duration, warmupSeconds: 2, latencyHistogram: true }
          const label = `GET ${a.label} x${connections}`
          if (points !== undefined && !points.includes(`${a.label} x${connections}`)) continue
          const runs: Record<string, MeasuredServer[]> = {}
          const measured: Record<string, RoundFigures | string> = {}
          const order = Object.keys(servers)
          for (let round = 0; round < rounds; round++) {
            const names = round % 2 === 0 ? order : [...order].reverse()
            for (const name of names) {
              const server = servers[name]
              if (server === undefined || typeof server === 'string') continue
              if ((name === 'verdaccio' || name === 'origin') && round > 0) continue // references, not the target: once
              const m = await measureServer(`${server.base}${artifactPath(a)}`, shape, () => peakRssBytes(server.pid))
              notes.push(...loadWarnings(`${name} ${label}`, m.load))
              ;(runs[name] ??= []).push(m)
            }
          }
          for (const [name, server] of Object.entries(servers)) {
            measured[name] = typeof server === 'string' ? server : figuresOf(runs[name] ?? [])
          }
          if (rounds > 1) {
            const spread = (name: string): string => perRound(runs[name] ?? [], (m) => m.load.bytesPerSecond / MB, 0)
            const p99s = (name: string): string => perRound(runs[name] ?? [], (m) => m.load.p99Ms, 1)
            const medianP99 = (name: string): string => median((runs[name] ?? []).map((m) => m.load.p99Ms)).toFixed(1)
            notes.push(`${label} MB/s per round: proxy ${spread('proxy')}, nginx relay ${spread('nginx relay')}; p99 ms per round: proxy ${p99s('proxy')}, nginx relay ${p99s('nginx relay')} (their medians: proxy ${medianP99('proxy')}, nginx relay ${medianP99('nginx relay')})`)
          }
          const own = measured['proxy'] as RoundFigures
          const pick = (m: RoundFigures | string, f: (x: RoundFigures) => Measurement): Measurement | string => (typeof m === 'string' ? m : f(m))
          const baselines = (f: (x: RoundFigures) => Measurement): Record<string, Measurement | string> => ({
            nginx: pick(measured['nginx relay'] ?? 'not measured', f),
            verdaccio: pick(measured['verdaccio'] ?? 'not measured', f),
            'origin direct': pick(measured['origin'] ?? 'not measured', f),
          })
          const throughput = (x: RoundFigures): Measurement => measurement('MB/s', 'higher', x.bytesPerSecond / MB)
          const p99 = (x: RoundFigures): Measurement => measurement('ms', 'lower', x.p99Ms)
          // Issue 18: at least 0.9x nginx's throughput and at most 1.2x its p99 at every point.
          rows.push({ metric: `${label} throughput`, project: throughput(own), baselines: baselines(throughput), goal: { baseline: 'nginx', goodness: 0.9, text: '>= 0.9x nginx' } })
          rows.push({ metric: `${label} p99 latency`, project: p99(own), baselines: baselines(p99), goal: { baseline: 'nginx', goodness: 1 / 1.2, text: '<= 1.2x nginx' } })
          // Resident now, after the point's runs: a leak or a buffer kept per request shows as a climb.
          const rss = await rssBytes(relay.pid)
          const nginxRss = typeof nginxRelay === 'string' ? undefined : await treeRssBytes(nginxRelay.pid)
          if (rss !== undefined) {
            proxyRss.push({ label, connections, bytes: rss })
            rows.push({
              metric: `${label} RSS after`,
              project: measurement('MiB', 'lower', rss / MIB),
              baselines: { nginx: nginxRss === undefined ? 'not read' : measurement('MiB', 'lower', nginxRss / MIB) },
            })
          }
        }
      }

      // Flat: from the first point at full concurrency (every connection and buffer made) to the end.
      const top = Math.max(...CONCURRENCY)
      const first = proxyRss.find((r) => r.connections === top)
      const last = proxyRss[proxyRss.length - 1]
      if (first !== undefined && last !== undefined) {
        // The highest RSS from that point on, against that point's RSS plus the allowance.
        const highest = Math.max(...proxyRss.slice(proxyRss.indexOf(first)).map((r) => r.bytes))
        rows.push({
          metric: `RSS highest from ${first.label} to the end of the throughput runs`,
          project: measurement('MiB', 'lower', highest / MIB),
          baselines: { target: measurement('MiB', 'lower', (first.bytes + RSS_TARGET_DRIFT) / MIB) },
          goal: { baseline: 'target', goodness: 1, text: `<= ${first.label} RSS + ${RSS_TARGET_DRIFT / MIB} MiB` },
        })
        notes.push(`proxy RSS after each point (MiB): ${proxyRss.map((r) => `${r.label} ${(r.bytes / MIB).toFixed(1)}`).join(', ')}`)
      }

      // A fresh relay process for the memory figure, so the throughput runs do not set its baseline.
      await relay.stop()
      relay = await startRelay(origin.origin)
      const big = artifacts[artifacts.length - 1]!
      await fetchBytes(`${relay.origin}${artifactPath(big)}`) // one request first: code loaded, pools made
      const slow = await slowClients(relay.origin, artifactPath(big), relay.pid, SLOW_CLIENTS, SLOW_SECONDS)
      const growth = slow.peak - slow.before
      rows.push({
        metric: `RSS growth, ${SLOW_CLIENTS} slow clients reading ${big.label}`,
        project: measurement('MiB', 'lower', growth / MIB),
        baselines: { target: measurement('MiB', 'lower', RSS_TARGET_GROWTH / MIB) },
        goal: { baseline: 'target', goodness: 1, text: `<= ${RSS_TARGET_GROWTH / MIB} MiB` },
      })
      const tool = await defaultLoadTool()
      notes.push(
        `slow clients: ${SLOW_CLIENTS} connections reading about ${SLOW_RATE / 1024} KiB/s each for ${SLOW_SECONDS} s (${(slow.bytes / MIB).toFixed(0)} MiB read in all); RSS ${(slow.before / MIB).toFixed(1)} MiB before, ${(slow.peak / MIB).toFixed(1)} MiB at peak; target growth under ${RSS_TARGET_GROWTH / MIB} MiB: ${growth < RSS_TARGET_GROWTH ? 'met' : 'MISSED'}`,
        `origin: nginx serving the files statically over plain http; the proxy relays through its private leg (no gate, no queue); the nginx relay is tuned as PEERS.md says; Verdaccio serves the same files from its storage`,
        `load by ${tool} from its own process, ${duration} s per run after a 2 s warm-up; proxy and nginx relay: ${rounds} alternating round(s) (BENCH_RELAY_ROUNDS), throughput their median, p99 over their requests pooled${tool === 'wrk' ? '' : ' (autocannon: the median of their p99s)'}; Verdaccio and the origin direct: one; each server is one process (nginx: one worker); incompressible random artifacts`,
      )
      return { title: 'Artifact relay: proxy (private leg) vs tuned nginx relay vs Verdaccio, same origin and bytes', rows, notes }
    } finally {
      await relay?.stop()
      if (typeof nginxRelay !== 'string') await nginxRelay.stop()
      if (typeof verdaccio !== 'string') await verdaccio.stop()
      await origin?.stop()
      await rm(root, { recursive: true, force: true })
    }
  },
}

export default scenario
