/**
 * Records the real dependency tree the `install-time` scenario installs
 * (bench/INSTALL-TIME.md). Run once, by hand, on a machine that reaches the
 * public npm registry:
 *
 *   npm run build && node dist/bench/tools/record-install-tree.js [--force]
 *
 * The registry is the npm client's own (`npm config get registry`), as the
 * proxy's quick start takes it; its address is never written here. A
 * recording registry on 127.0.0.1 stands between the clients and it: the
 * first request for a package reads its full packument once from the public
 * registry and keeps the bytes; every answer is that document as it stood
 * QUARANTINE_SECONDS ago (later versions hidden, as a team behind the
 * proxy's seven-day quarantine would have locked them), with every version's
 * `dist` pointing at a tarball made locally (bench/fixtures/npm-tarball.ts).
 * npm (`--package-lock-only`), pnpm (`--lockfile-only`) and yarn classic
 * (a full install of the small local tarballs; it has no lockfile-only mode)
 * each resolve the project through it, so each lockfile is the client's own
 * resolution, with integrity that matches the local tarballs, and every
 * package any of them needs is recorded.
 *
 * Writes `BENCH_INSTALL_TREE_DIR` (default `bench/.work/install-tree`,
 * git-ignored; layout in bench/fixtures/install-tree.ts) and refuses to
 * overwrite a recorded tree without `--force`. Nothing it writes is
 * committed.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  LOCKFILES, LOCKFILE_OF, QUARANTINE_SECONDS, TREE_FORMAT, lockedVersions, mergeLocked, packumentBefore, packumentFile, servedPackument,
  treeDir, versionDigests, versionTarball, type Packument, type TreeManifest,
} from '../fixtures/install-tree.js'
import type { TarballDigests } from '../fixtures/npm-tarball.js'
import { CLIENT_NAMES, clientCommand, installCommand, runCommand, type ClientName } from '../lib/package-clients.js'

/**
 * The project: a React single-page application with its build, lint and
 * test toolchain and a small Express server, the kind of package.json a CI
 * fleet installs all day. Its tree is about 700 packages.
 */
const PROJECT = {
  name: 'install-time-tree',
  version: '1.0.0',
  private: true,
  dependencies: {
    'axios': '^1.7.0',
    'express': '^4.21.0',
    'lodash': '^4.17.21',
    'react': '^18.3.1',
    'react-dom': '^18.3.1',
    'react-router-dom': '^6.26.0',
  },
  devDependencies: {
    '@babel/core': '^7.25.0',
    '@babel/preset-env': '^7.25.0',
    '@babel/preset-react': '^7.24.0',
    'babel-loader': '^9.2.0',
    'eslint': '^8.57.0',
    'jest': '^29.7.0',
    'typescript': '^5.6.0',
    'webpack': '^5.94.0',
    'webpack-cli': '^5.1.4',
    'webpack-dev-server': '^5.1.0',
  },
}

/** Lockfiles of fewer packages than this are not the tree the scenario promises. */
const MINIMUM_PACKAGES = 500
const CLIENT_TIMEOUT_MS = 30 * 60_000

interface Recorded {
  readonly doc: Packument
  readonly digests: Map<string, TarballDigests>
}

/** The recording registry: reads each public packument once, keeps its bytes, answers the cut-off view with local tarballs. */
class RecordingRegistry {
  readonly #publicRegistry: string
  readonly #dir: string
  readonly #cutoffMs: number
  readonly #docs = new Map<string, Promise<Recorded | undefined>>()
  readonly #server = createServer((req, res) => { void this.#handle(req, res) })
  origin = ''
  publicReads = 0

  constructor(publicRegistry: string, dir: string, cutoffMs: number) {
    this.#publicRegistry = publicRegistry.endsWith('/') ? publicRegistry : `${publicRegistry}/`
    this.#dir = dir
    this.#cutoffMs = cutoffMs
  }

  async listen(): Promise<void> {
    // Clients keep connections idle between bursts; Node's 5 s default closes them under a request in flight (a hang-up with retries off).
    this.#server.keepAliveTimeout = 120_000
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve))
    this.origin = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`
  }

  get names(): string[] {
    return [...this.#docs.keys()]
  }

  async recorded(name: string): Promise<Recorded | undefined> {
    let entry = this.#docs.get(name)
    if (entry === undefined) {
      entry = this.#record(name)
      this.#docs.set(name, entry)
    }
    return entry
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections()
    await new Promise((resolve) => this.#server.close(resolve))
  }

  async #record(name: string): Promise<Recorded | undefined> {
    this.publicReads++
    const response = await fetch(`${this.#publicRegistry}${name.replace('/', '%2f')}`, { headers: { accept: 'application/json' } })
    if (response.status === 404) return undefined
    if (response.status !== 200) throw new Error(`the public registry answered ${response.status} for ${name}`)
    const bytes = Buffer.from(await response.arrayBuffer())
    const doc = JSON.parse(bytes.toString('utf8')) as Packument
    if (doc.name !== name) throw new Error(`the public registry answered ${name} with a document for ${String(doc.name)}`)
    await writeFile(packumentFile(this.#dir, name), bytes)
    return { doc, digests: versionDigests(doc) }
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).slice(1)
      const cut = path.indexOf('/-/')
      const name = cut < 0 ? path : path.slice(0, cut)
      const recorded = name === '' || name.startsWith('-/') ? undefined : await this.recorded(name)
      if (recorded === undefined) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}')
        return
      }
      if (cut < 0) {
        const body = JSON.stringify(servedPackument(packumentBefore(recorded.doc, this.#cutoffMs), this.origin, recorded.digests))
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body)
        return
      }
      const file = path.slice(cut + 3)
      const base = name.slice(name.lastIndexOf('/') + 1)
      const version = file.startsWith(`${base}-`) && file.endsWith('.tgz') ? file.slice(base.length + 1, -'.tgz'.length) : undefined
      if (version === undefined || recorded.doc.versions?.[version] === undefined) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"no such tarball"}')
        return
      }
      const tarball = versionTarball(recorded.doc, version)
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': tarball.length }).end(tarball)
    } catch (error) {
      console.error(`record-install-tree: ${req.url ?? ''}: ${String(error)}`)
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' })
      res.end('{"error":"recording failed"}')
    }
  }
}

function npmClientRegistry(): string {
  const out = execFileSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8', timeout: 15_000, stdio: ['ignore', 'pipe', 'inherit'] }).trim()
  if (out === '' || out === 'undefined') throw new Error('`npm config get registry` names no registry')
  return out
}

/** One client resolves the project through the recording registry; returns its lockfile. */
async function resolveWith(client: ClientName, registry: string, work: string): Promise<string> {
  const command = clientCommand(client)
  if (typeof command !== 'string') throw new Error(`${client}: ${command.unavailable}`)
  const root = await mkdtemp(join(work, `${client}-`))
  const project = join(root, 'project')
  await Promise.all([mkdir(project), mkdir(join(root, 'home')), mkdir(join(root, 'cache'))])
  await writeFile(join(project, 'package.json'), `${JSON.stringify(PROJECT, null, 2)}\n`)
  const { args, env } = await installCommand(client, root, project, registry)
  // Resolution only where the client has it; install scripts never run (the local tarballs have none anyway).
  const extra = client === 'npm' ? ['--package-lock-only', '--ignore-scripts'] : client === 'pnpm' ? ['--lockfile-only', '--ignore-scripts'] : ['--ignore-scripts']
  const started = Date.now()
  const run = await runCommand(command, [...args, ...extra], project, env, CLIENT_TIMEOUT_MS)
  if (run.exitCode !== 0) throw new Error(`${client} could not resolve the project (exit ${run.exitCode ?? run.signal}):\n${run.output}`)
  console.log(`record-install-tree: ${client} resolved the project in ${((Date.now() - started) / 1000).toFixed(0)} s`)
  return readFile(join(project, LOCKFILE_OF[client]), 'utf8')
}

function clientVersion(client: ClientName): string {
  const command = clientCommand(client)
  if (typeof command !== 'string') return 'unavailable'
  return execFileSync(command, ['--version'], { encoding: 'utf8', timeout: 30_000 }).trim()
}

async function main(): Promise<number> {
  const force = process.argv.includes('--force')
  const dir = treeDir()
  if (existsSync(join(dir, 'tree.json')) && !force) {
    console.error(`record-install-tree: ${dir} already holds a recorded tree; pass --force to record it again`)
    return 1
  }
  const publicRegistry = npmClientRegistry()
  const recordedAt = new Date()
  const cutoffMs = recordedAt.getTime() - QUARANTINE_SECONDS * 1000
  await rm(dir, { recursive: true, force: true })
  await mkdir(join(dir, 'packuments'), { recursive: true })
  await mkdir(join(dir, 'project'), { recursive: true })
  const work = await mkdtemp(join(tmpdir(), 'record-install-tree-'))
  const registry = new RecordingRegistry(publicRegistry, dir, cutoffMs)
  try {
    await registry.listen()
    console.log(`record-install-tree: recording from the npm client's registry, versions published before ${new Date(cutoffMs).toISOString()}`)
    const lockfiles: Record<string, string> = {}
    // One after another: each client's requests are its own, and the first one warms the recording for the others.
    for (const client of CLIENT_NAMES) lockfiles[LOCKFILE_OF[client]] = await resolveWith(client, `${registry.origin}/`, work)
    const locked = mergeLocked(LOCKFILES.map((file) => lockedVersions(file, lockfiles[file] ?? '')))
    for (const [name, versions] of locked) {
      const recorded = await registry.recorded(name)
      for (const version of versions) {
        if (recorded?.digests.get(version) === undefined) throw new Error(`a lockfile names ${name}@${version}, which the recording does not hold`)
      }
    }
    const perClient = LOCKFILES.map((file) => `${file} ${lockedVersions(file, lockfiles[file] ?? '').size} packages`)
    if (Math.min(...LOCKFILES.map((file) => lockedVersions(file, lockfiles[file] ?? '').size)) < MINIMUM_PACKAGES) {
      throw new Error(`the tree is smaller than ${MINIMUM_PACKAGES} packages (${perClient.join(', ')})`)
    }
    for (const file of LOCKFILES) await writeFile(join(dir, 'project', file), lockfiles[file] ?? '')
    await writeFile(join(dir, 'project', 'package.json'), `${JSON.stringify(PROJECT, null, 2)}\n`)
    const recordedNames: string[] = []
    for (const name of registry.names.sort()) if (await registry.recorded(name) !== undefined) recordedNames.push(name)
    const manifest: TreeManifest = {
      format: TREE_FORMAT,
      recordedAt: recordedAt.toISOString(),
      cutoff: new Date(cutoffMs).toISOString(),
      recordOrigin: registry.origin,
      clients: Object.fromEntries(CLIENT_NAMES.map((c) => [c, clientVersion(c)])),
      packages: recordedNames,
    }
    await writeFile(join(dir, 'tree.json'), `${JSON.stringify(manifest, null, 2)}\n`)
    let versions = 0
    for (const v of locked.values()) versions += v.size
    console.log(`record-install-tree: ${recordedNames.length} packuments recorded (${registry.publicReads} public reads); lockfiles: ${perClient.join(', ')}; ${versions} distinct versions locked in all`)
    console.log(`record-install-tree: written to ${dir}`)
    return 0
  } catch (error) {
    await rm(dir, { recursive: true, force: true })
    throw error
  } finally {
    await registry.close()
    await rm(work, { recursive: true, force: true })
  }
}

process.exitCode = await main()
