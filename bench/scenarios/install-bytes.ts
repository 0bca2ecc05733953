/**
 * Bytes on the wire per install (issue 17, "Must show"): real npm, pnpm and
 * yarn classic installs of one small project whose packuments are large (the
 * fixture typescript, @types/node, react, express and lodash documents),
 * through the built proxy, each client twice with a fresh cache:
 * - after: the client's own `Accept-Encoding` reaches the proxy, which codes
 *   packuments (README, "Compressed answers");
 * - before: the relay rewrites every request's `Accept-Encoding` to
 *   `identity`, so the proxy answers as it did before compression landed.
 *
 * The measurement is a counting TCP relay between the client and the proxy:
 * every byte the proxy sends the client (status lines, headers, bodies), what
 * the client pays across a network. The proxy's `server.baseUrl` is the
 * relay's origin, so tarballs pass through it too (they are relayed
 * verbatim, so they weigh the same in both runs). The relay also reads the
 * HTTP/1.1 framing, without changing a byte of the answers, to attribute
 * bytes to packument and tarball answers and to record the `Accept-Encoding`
 * each client sent.
 *
 * The upstream is a public Verdaccio over https on 127.0.0.1 holding the
 * fixture packuments; the version the project pins gets a small tarball made
 * here (its `dist` rewritten to match, its dependencies and bins dropped), so
 * the install completes with no network beyond loopback.
 * test/clients/install-compression.test.ts reuses the relay and the upstream.
 */
import { execFile, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer, connect, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { request } from 'undici'
import YAML from 'yaml'
import { ChildPeer } from '../peers/child-peer.js'
import { readPackument, type FixturePackumentName } from '../peers/shared-data.js'
import { startVerdaccio, type VerdaccioPeer } from '../peers/verdaccio.js'
import type { Row, Scenario, ScenarioResult } from '../lib/scenario.js'
import { freePort } from '../lib/nginx.js'
import { clientCommand, installCommand, runCommand, type ClientName, type ClientRun } from '../lib/package-clients.js'

const execFileAsync = promisify(execFile)
const MB = 1_000_000
const CRLF = Buffer.from('\r\n')
const HEAD_END = Buffer.from('\r\n\r\n')
/** A request head longer than this is not HTTP the relay understands: it stops parsing and passes bytes through. */
const MAX_HEAD_BYTES = 64 * 1024

// ---------------------------------------------------------------------------
// The counting relay

/** One request and its answer as seen on the wire between a client and the proxy. */
export interface WireExchange {
  readonly method: string
  readonly path: string
  /** The `Accept` the client sent (full or abbreviated packument). */
  readonly accept: string | undefined
  /** The `Accept-Encoding` the client sent (several fields joined by ", "); undefined when it sent none. */
  readonly acceptEncoding: string | undefined
  /** What reached the proxy: the same, or `identity` when the relay rewrites it. */
  readonly forwardedAcceptEncoding: string | undefined
  readonly status: number
  readonly contentType: string | undefined
  readonly contentEncoding: string | undefined
  /** This answer's bytes on the wire: status line, headers and body as framed. */
  readonly bytes: number
}

export interface WireCount {
  /** Every byte the proxy sent to clients through the relay. */
  readonly bytesToClient: number
  /** Every byte clients sent, as they sent it (before any rewrite). */
  readonly bytesFromClient: number
  readonly connections: number
  /** Completed exchanges, in the order their answers ended. */
  readonly exchanges: readonly WireExchange[]
}

type RequestSeen = Pick<WireExchange, 'method' | 'path' | 'accept' | 'acceptEncoding' | 'forwardedAcceptEncoding'>

interface Tally { bytesToClient: number, bytesFromClient: number, connections: number, exchanges: WireExchange[] }

function headerFields(lines: readonly string[]): [string, string][] {
  return lines.map((line) => {
    const colon = line.indexOf(':')
    return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()]
  })
}

/** Client to proxy: reads each request head, records it and forwards it, rewriting `Accept-Encoding` when asked to. */
class RequestReader {
  #pending: Buffer = Buffer.alloc(0)
  #bodyLeft = 0
  /** Where a chunked request body (a streamed publish, RFC 9112 7.1) is: a size line, chunk data with its CRLF, the trailer. */
  #chunked: 'no' | 'size' | 'data' | 'trailer' = 'no'
  #raw = false
  readonly #seen: (request: RequestSeen) => void
  readonly #identityOnly: () => boolean

  constructor(seen: (request: RequestSeen) => void, identityOnly: () => boolean) {
    this.#seen = seen
    this.#identityOnly = identityOnly
  }

  /** The bytes to forward for `chunk`. */
  push(chunk: Buffer): Buffer[] {
    if (this.#raw) return [chunk]
    this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk])
    const out: Buffer[] = []
    for (;;) {
      if (this.#bodyLeft > 0) {
        const n = Math.min(this.#bodyLeft, this.#pending.length)
        if (n === 0) break
        out.push(this.#pending.subarray(0, n))
        this.#pending = this.#pending.subarray(n)
        this.#bodyLeft -= n
        if (this.#bodyLeft === 0 && this.#chunked === 'data') this.#chunked = 'size'
        continue
      }
      if (this.#chunked !== 'no') {
        const eol = this.#pending.indexOf(CRLF)
        if (eol < 0) {
          if (this.#pending.length > MAX_HEAD_BYTES) this.#passThrough(out)
          break
        }
        const line = this.#pending.subarray(0, eol)
        out.push(this.#pending.subarray(0, eol + CRLF.length))
        this.#pending = this.#pending.subarray(eol + CRLF.length)
        if (this.#chunked === 'size') {
          const size = parseInt(line.toString('latin1').split(';')[0] ?? '', 16)
          if (!Number.isFinite(size)) {
            this.#passThrough(out)
            break
          }
          if (size === 0) this.#chunked = 'trailer'
          else {
            this.#bodyLeft = size + CRLF.length
            this.#chunked = 'data'
          }
        } else if (eol === 0) this.#chunked = 'no'
        continue
      }
      const end = this.#pending.indexOf(HEAD_END)
      if (end < 0) {
        if (this.#pending.length > MAX_HEAD_BYTES) this.#passThrough(out)
        break
      }
      const [requestLine = '', ...lines] = this.#pending.subarray(0, end).toString('latin1').split('\r\n')
      this.#pending = this.#pending.subarray(end + HEAD_END.length)
      const [method = '', path = ''] = requestLine.split(' ')
      const identityOnly = this.#identityOnly()
      let acceptEncoding: string | undefined
      let accept: string | undefined
      let length = 0
      let chunked = false
      const kept: string[] = []
      headerFields(lines).forEach(([name, value], i) => {
        if (name === 'accept-encoding') {
          acceptEncoding = acceptEncoding === undefined ? value : `${acceptEncoding}, ${value}`
          if (identityOnly) return
        }
        if (name === 'accept') accept = value
        if (name === 'content-length') length = Number(value)
        if (name === 'transfer-encoding' && /chunked/i.test(value)) chunked = true
        kept.push(lines[i] ?? '')
      })
      if (identityOnly) kept.push('accept-encoding: identity')
      out.push(Buffer.from(`${[requestLine, ...kept].join('\r\n')}\r\n\r\n`, 'latin1'))
      this.#seen({ method, path, accept, acceptEncoding, forwardedAcceptEncoding: identityOnly ? 'identity' : acceptEncoding })
      if (chunked) this.#chunked = 'size'
      else this.#bodyLeft = Number.isFinite(length) && length > 0 ? length : 0
    }
    return out
  }

  #passThrough(out: Buffer[]): void {
    this.#raw = true
    if (this.#pending.length > 0) out.push(this.#pending)
    this.#pending = Buffer.alloc(0)
  }
}

type ResponseState = 'head' | 'fixed' | 'chunk-size' | 'chunk-data' | 'trailer' | 'until-close' | 'lost'

/** Proxy to client: follows the HTTP/1.1 framing (RFC 9112 6) to tell where each answer ends; never changes a byte. */
class ResponseReader {
  #pending: Buffer = Buffer.alloc(0)
  #state: ResponseState = 'head'
  #left = 0
  #current: { -readonly [K in keyof WireExchange]: WireExchange[K] } | undefined
  readonly #requests: RequestSeen[]
  readonly #done: (exchange: WireExchange) => void

  constructor(requests: RequestSeen[], done: (exchange: WireExchange) => void) {
    this.#requests = requests
    this.#done = done
  }

  push(chunk: Buffer): void {
    if (this.#state === 'lost') return
    this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk])
    for (;;) {
      const current = this.#current
      switch (this.#state) {
        case 'head': {
          const end = this.#pending.indexOf(HEAD_END)
          if (end < 0) return
          const [statusLine = '', ...lines] = this.#pending.subarray(0, end).toString('latin1').split('\r\n')
          this.#consume(end + HEAD_END.length)
          const status = Number(statusLine.split(' ')[1])
          const fields = new Map(headerFields(lines))
          const seen = this.#requests.shift()
          // An interim answer (100 Continue) leaves its request waiting for the final one.
          if (status >= 100 && status < 200) {
            if (seen !== undefined) this.#requests.unshift(seen)
            continue
          }
          this.#current = {
            method: seen?.method ?? '?', path: seen?.path ?? '?', accept: seen?.accept, acceptEncoding: seen?.acceptEncoding, forwardedAcceptEncoding: seen?.forwardedAcceptEncoding,
            status, contentType: fields.get('content-type'), contentEncoding: fields.get('content-encoding'), bytes: end + HEAD_END.length,
          }
          const length = fields.get('content-length')
          if (seen?.method === 'HEAD' || status === 204 || status === 304) this.#finish()
          else if (/chunked/i.test(fields.get('transfer-encoding') ?? '')) this.#state = 'chunk-size'
          else if (length !== undefined) {
            this.#left = Number(length)
            if (!Number.isFinite(this.#left) || this.#left < 0) this.#state = 'lost'
            else if (this.#left === 0) this.#finish()
            else this.#state = 'fixed'
          } else this.#state = 'until-close'
          break
        }
        case 'fixed':
        case 'chunk-data': {
          const n = Math.min(this.#left, this.#pending.length)
          if (n === 0) return
          this.#consume(n)
          this.#left -= n
          if (this.#left === 0) {
            if (this.#state === 'fixed') this.#finish()
            else this.#state = 'chunk-size'
          }
          break
        }
        case 'chunk-size': {
          const end = this.#pending.indexOf(CRLF)
          if (end < 0) return
          const size = parseInt(this.#pending.subarray(0, end).toString('latin1').split(';')[0] ?? '', 16)
          this.#consume(end + CRLF.length)
          if (!Number.isFinite(size)) this.#state = 'lost'
          else if (size === 0) this.#state = 'trailer'
          else {
            this.#left = size + CRLF.length
            this.#state = 'chunk-data'
          }
          break
        }
        case 'trailer': {
          const end = this.#pending.indexOf(CRLF)
          if (end < 0) return
          this.#consume(end + CRLF.length)
          if (end === 0) this.#finish()
          break
        }
        case 'until-close':
          this.#consume(this.#pending.length)
          return
        case 'lost':
          // Framing the relay cannot follow: totals still count, attribution stops for this connection.
          if (current !== undefined) this.#done(current)
          this.#current = undefined
          this.#pending = Buffer.alloc(0)
          return
      }
    }
  }

  /** The connection closed: an answer delimited by the close ends here. */
  end(): void {
    if (this.#current !== undefined && this.#state === 'until-close') this.#finish()
  }

  #consume(n: number): void {
    this.#pending = this.#pending.subarray(n)
    if (this.#current !== undefined && this.#state !== 'head') this.#current.bytes += n
  }

  #finish(): void {
    if (this.#current !== undefined) this.#done(this.#current)
    this.#current = undefined
    this.#state = 'head'
  }
}

/**
 * A TCP relay on 127.0.0.1 in front of one port: each client connection gets
 * its own connection to the target, bytes flow both ways with backpressure,
 * and every byte is counted. `identityOnly` rewrites each request's
 * `Accept-Encoding` to `identity` (the "before" run).
 */
export class CountingRelay {
  /** Rewrite every request's Accept-Encoding to `identity`; read per request, so it may be switched between runs. */
  identityOnly = false
  readonly port: number
  readonly #server: Server
  readonly #sockets = new Set<Socket>()
  #tally: Tally = { bytesToClient: 0, bytesFromClient: 0, connections: 0, exchanges: [] }
  #lastActivityAt = performance.now()

  private constructor(server: Server, port: number) {
    this.#server = server
    this.port = port
  }

  static async start(targetPort: number, targetHost = '127.0.0.1'): Promise<CountingRelay> {
    const server = createServer()
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(0, '127.0.0.1', () => resolve())
    })
    const relay = new CountingRelay(server, (server.address() as { port: number }).port)
    server.on('connection', (client) => relay.#relay(client, targetPort, targetHost))
    return relay
  }

  get origin(): string {
    return `http://127.0.0.1:${this.port}`
  }

  /** `performance.now()` when a byte last crossed the relay, either way (to tell when a peer has gone quiet). */
  get lastActivityAt(): number {
    return this.#lastActivityAt
  }

  /** What was counted since the last take (or the start), and a fresh count from here on. */
  take(): WireCount {
    const tally = this.#tally
    this.#tally = { bytesToClient: 0, bytesFromClient: 0, connections: 0, exchanges: [] }
    return tally
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy()
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }

  #relay(client: Socket, targetPort: number, targetHost: string): void {
    const upstream = connect(targetPort, targetHost)
    for (const s of [client, upstream]) {
      this.#sockets.add(s)
      s.once('close', () => this.#sockets.delete(s))
    }
    this.#tally.connections++
    const requests: RequestSeen[] = []
    const reader = new RequestReader((r) => requests.push(r), () => this.identityOnly)
    const answers = new ResponseReader(requests, (e) => this.#tally.exchanges.push(e))
    client.on('data', (chunk: Buffer) => {
      this.#lastActivityAt = performance.now()
      this.#tally.bytesFromClient += chunk.length
      let ok = true
      for (const part of reader.push(chunk)) ok = upstream.write(part) && ok
      if (!ok) {
        client.pause()
        upstream.once('drain', () => client.resume())
      }
    })
    upstream.on('data', (chunk: Buffer) => {
      this.#lastActivityAt = performance.now()
      this.#tally.bytesToClient += chunk.length
      answers.push(chunk)
      if (!client.write(chunk)) {
        upstream.pause()
        client.once('drain', () => upstream.resume())
      }
    })
    client.on('end', () => upstream.end())
    upstream.on('end', () => {
      answers.end()
      client.end()
    })
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
    client.on('error', () => upstream.destroy())
    upstream.on('error', () => client.destroy())
  }
}

/** A packument answer: a GET under the mount that names no file (`/-/`) and answered 200. */
export function isPackumentAnswer(e: WireExchange, mount = '/js/'): boolean {
  return e.method === 'GET' && e.path.startsWith(mount) && !e.path.includes('/-/') && e.status === 200
}

export function isTarballAnswer(e: WireExchange): boolean {
  return e.method === 'GET' && e.path.includes('/-/') && e.path.endsWith('.tgz') && e.status === 200
}

// ---------------------------------------------------------------------------
// The fixture upstream

/** The project every client installs: five fixture documents, 0.1 to 10.5 MB each. */
export const INSTALL_PACKAGES: readonly FixturePackumentName[] = ['typescript', '@types/node', 'react', 'express', 'lodash']

export interface InstallUpstream {
  readonly peer: VerdaccioPeer
  /** The project's dependencies: each package pinned to its fixture `latest`. */
  readonly dependencies: Readonly<Record<string, string>>
  stop(): Promise<void>
}

async function tarballFor(dir: string, name: string, version: string): Promise<Buffer> {
  const root = await mkdtemp(join(dir, 'pack-'))
  await mkdir(join(root, 'package'))
  await writeFile(join(root, 'package', 'package.json'), JSON.stringify({ name, version, license: 'MIT', main: 'index.js' }, null, 2))
  await writeFile(join(root, 'package', 'index.js'), `module.exports = ${JSON.stringify(`${name}@${version}`)}\n`)
  const file = join(root, 'package.tgz')
  await execFileAsync('tar', ['-czf', file, '-C', root, 'package'])
  return readFile(file)
}

/**
 * A public Verdaccio (https, its own throwaway CA) holding the fixture
 * documents of `names`, each document whole except the pinned version: its
 * `dist` points at a small tarball placed in storage, and what would pull
 * in more packages or files (dependencies, bins, scripts) is dropped.
 */
export async function startInstallUpstream(names: readonly FixturePackumentName[] = INSTALL_PACKAGES): Promise<InstallUpstream> {
  const dir = await mkdtemp(join(tmpdir(), 'install-upstream-'))
  try {
    const dependencies: Record<string, string> = {}
    const packuments: { name: string, [key: string]: unknown }[] = []
    const tarballs: { name: string, file: string, bytes: Buffer }[] = []
    for (const name of names) {
      const doc = await readPackument(name)
      const version = doc['dist-tags']['latest']
      const manifest = version === undefined ? undefined : doc.versions[version]
      if (version === undefined || manifest === undefined) throw new Error(`the fixture ${name} has no latest version`)
      const bytes = await tarballFor(dir, name, version)
      const file = `${name.split('/').pop() ?? name}-${version}.tgz`
      const {
        dependencies: _d, optionalDependencies: _o, peerDependencies: _p, peerDependenciesMeta: _pm, bundleDependencies: _b, bundledDependencies: _bd,
        bin: _bin, scripts: _s, hasInstallScript: _h, directories: _dir, os: _os, cpu: _cpu, engines: _e, ...kept
      } = manifest as Record<string, unknown>
      const dist = {
        // Verdaccio rebuilds the origin from the request (PEERS.md); only the file name counts.
        tarball: `http://127.0.0.1/${name}/-/${file}`,
        integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
        shasum: createHash('sha1').update(bytes).digest('hex'),
      }
      packuments.push({
        ...doc,
        versions: { ...doc.versions, [version]: { ...kept, dist } },
        _attachments: { [file]: { shasum: dist.shasum, version } },
      })
      tarballs.push({ name, file, bytes })
      dependencies[name] = version
    }
    const peer = await startVerdaccio({ role: 'public', packuments })
    for (const t of tarballs) await writeFile(join(peer.storageDir, ...t.name.split('/'), t.file), t.bytes)
    return { peer, dependencies, stop: async () => { await peer.stop(); await rm(dir, { recursive: true, force: true }) } }
  } catch (error) {
    await rm(dir, { recursive: true, force: true })
    throw error
  }
}

/** The js mount for a proxy in front of `upstream`: public only, every version admitted (the gate is not what is measured). */
export function installMount(upstream: InstallUpstream): Record<string, unknown> {
  const { peer } = upstream
  return { js: { upstreams: { public: { url: peer.url, caFile: peer.caFile, allowInternalRanges: ['127.0.0.0/8'] } }, rules: [{ rule: 'AllowIfOlderThan', seconds: 0 }] } }
}

// ---------------------------------------------------------------------------
// The clients (bench/lib/package-clients.ts)

export { clientCommand, type ClientName }

/** One install of `dependencies` with `client` in a fresh folder and cache; throws when it fails or installs another version. */
async function installOnce(client: ClientName, command: string, registry: string, dependencies: Readonly<Record<string, string>>): Promise<ClientRun> {
  const root = await mkdtemp(join(tmpdir(), `bench-install-${client}-`))
  try {
    const project = join(root, 'project')
    await Promise.all([mkdir(project), mkdir(join(root, 'home')), mkdir(join(root, 'cache'))])
    await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'install-bytes', version: '1.0.0', private: true, dependencies }, null, 2))
    const { args, env } = await installCommand(client, root, project, registry)
    const run = await runCommand(command, args, project, env, 120_000)
    if (run.exitCode !== 0) throw new Error(`${client} install ${run.signal === null ? `exited ${run.exitCode}` : `was killed by ${run.signal}`}:\n${run.output}`)
    for (const [name, version] of Object.entries(dependencies)) {
      const installed = JSON.parse(await readFile(join(project, 'node_modules', ...name.split('/'), 'package.json'), 'utf8')) as { version?: unknown }
      if (installed.version !== version) throw new Error(`${client} installed ${name}@${String(installed.version)}, not ${version}`)
    }
    return run
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

// ---------------------------------------------------------------------------
// The scenario

async function startProxy(upstream: InstallUpstream, relay: CountingRelay, dir: string, port: number): Promise<{ stop(): Promise<void> }> {
  const config = join(dir, 'proxy.yaml')
  await writeFile(config, YAML.stringify({
    // Tarball links name the relay, so downloads are counted too.
    server: { host: '127.0.0.1', port, baseUrl: relay.origin },
    runtime: { cores: 1 },
    observability: { logLevel: 'warn' },
    queue: { path: join(dir, 'queue') },
    store: { path: join(dir, 'store') },
    mounts: installMount(upstream),
  }))
  const service = fileURLToPath(new URL('../../server/cli/service.js', import.meta.url))
  const peer = new ChildPeer('proxy', spawn(process.execPath, [service, 'proxy', '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] }))
  for (let i = 0; i < 200; i++) {
    try {
      const res = await request(`http://127.0.0.1:${port}/readyz`)
      await res.body.dump()
      if (res.statusCode === 200) return { stop: () => peer.stop() }
    } catch { /* not listening yet */ }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  await peer.stop()
  throw new Error(`the proxy did not become ready:\n${peer.output}`)
}


interface Measured { readonly wire: WireCount, readonly run: ClientRun }

function sum(exchanges: readonly WireExchange[], keep: (e: WireExchange) => boolean): number {
  return exchanges.filter(keep).reduce((n, e) => n + e.bytes, 0)
}

function codings(exchanges: readonly WireExchange[]): string {
  const counts = new Map<string, number>()
  for (const e of exchanges.filter((x) => isPackumentAnswer(x))) {
    const coding = e.contentEncoding ?? 'identity'
    counts.set(coding, (counts.get(coding) ?? 0) + 1)
  }
  return [...counts].map(([coding, n]) => `${coding} x${n}`).join(', ') || 'none'
}

/** Which packument form the client asked for. */
function forms(exchanges: readonly WireExchange[]): string {
  const form = (accept: string | undefined): string => accept?.includes('application/vnd.npm.install-v1+json') === true ? 'abbreviated' : 'full'
  return [...new Set(exchanges.filter((x) => isPackumentAnswer(x)).map((e) => `${form(e.accept)} (Accept ${JSON.stringify(e.accept ?? '')})`))].join(' / ')
}

/**
 * Every document in both forms and all three codings, once, before any
 * install is timed: each install then reads retained answers, so the
 * durations in the notes compare like with like (the bytes do not depend on it).
 */
async function warm(origin: string, names: readonly string[]): Promise<void> {
  for (const name of names) {
    for (const accept of ['application/json', 'application/vnd.npm.install-v1+json']) {
      for (const coding of ['identity', 'gzip', 'br']) {
        const res = await request(`${origin}/js/${name.replace('/', '%2f')}`, { headers: { accept, 'accept-encoding': coding } })
        await res.body.dump()
        if (res.statusCode !== 200) throw new Error(`warming ${name}: the proxy answered ${res.statusCode}`)
      }
    }
  }
}

function sent(exchanges: readonly WireExchange[]): string {
  const values = [...new Set(exchanges.filter((x) => isPackumentAnswer(x)).map((e) => e.acceptEncoding ?? '(none)'))]
  return values.map((v) => JSON.stringify(v)).join(' / ') || '(no packument request)'
}

const MB_ROW = (value: number): { unit: string, better: 'lower', value: number } => ({ unit: 'MB', better: 'lower', value: value / MB })

const scenario: Scenario = {
  name: 'install-bytes',
  async run(): Promise<ScenarioResult> {
    const dir = await mkdtemp(join(tmpdir(), 'bench-install-bytes-'))
    const rows: Row[] = []
    const notes: string[] = []
    let upstream: InstallUpstream | undefined
    let relay: CountingRelay | undefined
    let proxy: { stop(): Promise<void> } | undefined
    try {
      const fixture = upstream = await startInstallUpstream()
      const port = await freePort()
      const counter = relay = await CountingRelay.start(port)
      proxy = await startProxy(fixture, counter, dir, port)
      await warm(`http://127.0.0.1:${port}`, Object.keys(fixture.dependencies))
      const registry = `${counter.origin}/js/`
      for (const client of ['npm', 'pnpm', 'yarn'] as const) {
        const command = clientCommand(client)
        if (typeof command !== 'string') {
          notes.push(`${client}: unavailable, ${command.unavailable}`)
          continue
        }
        const measure = async (identityOnly: boolean): Promise<Measured> => {
          counter.identityOnly = identityOnly
          counter.take()
          const run = await installOnce(client, command, registry, fixture.dependencies)
          return { run, wire: counter.take() }
        }
        const after = await measure(false)
        const before = await measure(true)
        const label = `${client} (Accept-Encoding ${sent(after.wire.exchanges)})`
        rows.push({ metric: `${label}: all bytes to the client`, project: MB_ROW(after.wire.bytesToClient), baselines: { 'compression off': MB_ROW(before.wire.bytesToClient) } })
        rows.push({ metric: `${label}: packument answers`, project: MB_ROW(sum(after.wire.exchanges, (e) => isPackumentAnswer(e))), baselines: { 'compression off': MB_ROW(sum(before.wire.exchanges, (e) => isPackumentAnswer(e))) } })
        notes.push(`${client} asks for ${forms(after.wire.exchanges)}`)
        notes.push(`${client}: after ${after.wire.bytesToClient} B (packuments ${codings(after.wire.exchanges)}; tarballs ${sum(after.wire.exchanges, isTarballAnswer)} B; ${after.wire.exchanges.length} answers on ${after.wire.connections} connections; ${after.run.seconds.toFixed(1)} s), `
          + `before ${before.wire.bytesToClient} B (packuments ${codings(before.wire.exchanges)}; ${before.wire.exchanges.length} answers; ${before.run.seconds.toFixed(1)} s)`)
      }
      notes.push(
        `project: ${Object.entries(upstream.dependencies).map(([n, v]) => `${n}@${v}`).join(', ')} (fixture packuments, small tarballs), each install in a fresh folder and cache`,
        'bytes: every byte the proxy sent the client, counted by a TCP relay between them (status lines, headers, packuments and tarballs); "compression off" rewrites each request\'s Accept-Encoding to identity at the relay',
        'the upstream is Verdaccio, which pretty-prints version objects, and the proxy splices them verbatim: identity bytes here are about 1.4x what a minifying upstream gives (typescript full: 13.6 MB against 9.8 MB minified); coded bytes barely change',
      )
      return { title: 'Bytes on the wire per install: npm, pnpm and yarn classic through the proxy, Accept-Encoding as each client sends it vs compression off', rows, notes }
    } finally {
      await proxy?.stop()
      await relay?.close()
      await upstream?.stop()
      await rm(dir, { recursive: true, force: true })
    }
  },
}

export default scenario
