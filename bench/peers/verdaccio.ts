/**
 * A Verdaccio 6.8 registry as a child process on 127.0.0.1 and a port the
 * kernel picks (PEERS.md, "Registries"). Two roles: `private` over http and
 * `public` over https with a throwaway CA made by openssl (bench/peers/tls.ts).
 * It runs offline (`uplinks: {}`) on its own storage folder inside a temp
 * folder that `stop` removes.
 *
 * Trap (PEERS.md): Verdaccio rebuilds `dist.tarball` from the request's Host
 * and X-Forwarded-Proto, so the URLs it hands out depend on how it is called.
 */
import { fork } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Agent, request, type Dispatcher } from 'undici'
import { peerEnv } from './peer-env.js'
import { ChildPeer } from './child-peer.js'
import { makeTestCa, type TestCa } from './tls.js'

export type VerdaccioRole = 'private' | 'public'

/** A packument placed straight into storage before boot (no tarballs). */
export interface PlacedPackument {
  readonly name: string
  readonly [key: string]: unknown
}

export interface VerdaccioOptions {
  /** `private` (http) or `public` (https); default `private`. */
  readonly role?: VerdaccioRole
  /** Overrides the role's scheme. */
  readonly https?: boolean
  /** A CA to serve with; when https is on and none is given, one is made and removed on stop. */
  readonly ca?: TestCa
  readonly packuments?: readonly PlacedPackument[]
  /** Verdaccio's own log level; default `warn`. */
  readonly logLevel?: 'fatal' | 'error' | 'warn' | 'info' | 'http' | 'debug'
  /** Milliseconds to wait for it to listen; default 30 s (boot is about 1 s when the machine is quiet). */
  readonly bootTimeoutMs?: number
  /** Verdaccio's `uplinks`; default none (offline). */
  readonly uplinks?: Readonly<Record<string, Readonly<Record<string, unknown>>>>
  /** Verdaccio's `packages` rules; default: anyone reads, an authenticated user publishes and unpublishes, no uplink. */
  readonly packages?: Readonly<Record<string, Readonly<Record<string, unknown>>>>
  /** Extra environment for the child (NODE_EXTRA_CA_CERTS for an https uplink). */
  readonly env?: Readonly<Record<string, string>>
}

/*
 * Runs inside the child: Verdaccio's runServer builds an http(s) server from
 * the config file; listening on port 0 here avoids a free-port race, and the
 * port goes back over IPC. A child whose parent dies loses the IPC channel
 * and exits, so no registry outlives a crashed test.
 */
const LAUNCHER = `
const [verdaccioPath, configPath, port] = process.argv.slice(-3)
process.on('disconnect', () => process.exit(0))
require(verdaccioPath).runServer(configPath).then((server) => {
  server.on('error', (error) => { console.error(error); process.exit(1) })
  server.listen(Number(port), '127.0.0.1', () => process.send({ port: server.address().port }))
}, (error) => { console.error(error); process.exit(1) })
`

const DEFAULT_PUBLISHER = 'fixture-publisher'

/** Starts the child on `port` (0: the kernel picks) and resolves with the port it listens on. */
type Launch = (port: number) => Promise<{ child: ChildPeer, port: number }>

export class VerdaccioPeer {
  readonly role: VerdaccioRole
  /** e.g. `http://127.0.0.1:40123`, no trailing slash. */
  readonly origin: string
  /** The registry URL as clients take it, with a trailing slash. */
  readonly url: string
  readonly port: number
  readonly dir: string
  readonly storageDir: string
  /** Present when served over https. */
  readonly ca: TestCa | undefined
  /** Trusts `ca` when there is one; use it for every request to this peer. */
  readonly dispatcher: Dispatcher
  #process: ChildPeer
  readonly #launch: Launch
  #ownsCa: boolean
  #publisherToken: Promise<string> | undefined
  #stopping: Promise<void> | undefined

  constructor(init: { role: VerdaccioRole, origin: string, port: number, dir: string, storageDir: string, ca: TestCa | undefined, ownsCa: boolean, process: ChildPeer, launch: Launch }) {
    this.role = init.role
    this.origin = init.origin
    this.url = `${init.origin}/`
    this.port = init.port
    this.dir = init.dir
    this.storageDir = init.storageDir
    this.ca = init.ca
    this.#ownsCa = init.ownsCa
    this.#process = init.process
    this.#launch = init.launch
    this.dispatcher = new Agent(init.ca === undefined ? {} : { connect: { ca: init.ca.caPem } })
  }

  get process(): ChildPeer {
    return this.#process
  }

  get pid(): number {
    return this.#process.pid
  }

  /** Stops the child (SIGTERM) and starts it again on the same port, storage and configuration. */
  async restart(): Promise<void> {
    await this.#process.stop()
    const { child } = await this.#launch(this.port)
    this.#process = child
    await waitForPing(this)
  }

  get caFile(): string | undefined {
    return this.ca?.caFile
  }

  /** Creates a user without prompts and returns its token (PEERS.md). */
  async addUser(name: string, password: string): Promise<string> {
    const response = await request(`${this.origin}/-/user/org.couchdb.user:${encodeURIComponent(name)}`, {
      method: 'PUT',
      dispatcher: this.dispatcher,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name, password }),
    })
    const text = await response.body.text()
    if (response.statusCode !== 201 && response.statusCode !== 200) {
      throw new Error(`verdaccio refused user ${name}: ${response.statusCode} ${text}`)
    }
    const token = (JSON.parse(text) as { token?: unknown }).token
    if (typeof token !== 'string' || token === '') throw new Error(`verdaccio returned no token for ${name}: ${text}`)
    return token
  }

  /** One user per instance that fixture publishes use; made on first use. */
  publisherToken(): Promise<string> {
    this.#publisherToken ??= this.addUser(DEFAULT_PUBLISHER, 'fixture-publisher-password')
    return this.#publisherToken
  }

  /** Ends the child by its pid, waits for it to exit, then removes its folder (and a CA it made). */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      await this.#process.stop()
      await this.dispatcher.close()
      await rm(this.dir, { recursive: true, force: true })
      if (this.#ownsCa) await this.ca?.remove()
    })()
    return this.#stopping
  }
}

/** Where Verdaccio's local storage keeps a package's document. */
export function storagePackumentPath(storageDir: string, name: string): string {
  return join(storageDir, ...name.split('/'), 'package.json')
}

/**
 * Writes a packument into a storage folder the way Verdaccio's local storage
 * keeps it. Only the document: a tarball GET for it answers 404.
 */
export async function placePackument(storageDir: string, packument: PlacedPackument): Promise<void> {
  const path = storagePackumentPath(storageDir, packument.name)
  await mkdir(join(path, '..'), { recursive: true })
  const stored = { _rev: '1-0', _attachments: {}, _uplinks: {}, _distfiles: {}, ...packument }
  await writeFile(path, JSON.stringify(stored))
}

export async function startVerdaccio(options: VerdaccioOptions = {}): Promise<VerdaccioPeer> {
  const role = options.role ?? 'private'
  const https = options.https ?? role === 'public'
  const dir = await mkdtemp(join(tmpdir(), `verdaccio-${role}-`))
  const storageDir = join(dir, 'storage')
  await mkdir(storageDir)
  let ca = options.ca
  const ownsCa = https && ca === undefined
  let child: ChildPeer | undefined
  try {
    if (ownsCa) ca = await makeTestCa()
    for (const packument of options.packuments ?? []) await placePackument(storageDir, packument)
    const configPath = join(dir, 'config.yaml')
    const config = {
      storage: storageDir,
      auth: { htpasswd: { file: join(dir, 'htpasswd'), max_users: 1000 } },
      uplinks: options.uplinks ?? {},
      packages: options.packages ?? {
        '@*/*': { access: '$all', publish: '$authenticated', unpublish: '$authenticated' },
        '**': { access: '$all', publish: '$authenticated', unpublish: '$authenticated' },
      },
      listen: `${https ? 'https' : 'http'}://127.0.0.1:0`,
      ...(https && ca !== undefined ? { https: { key: ca.keyFile, cert: ca.certFile } } : {}),
      web: { enable: false },
      max_body_size: '200mb',
      log: { type: 'stdout', format: 'json', level: options.logLevel ?? 'warn' },
    }
    // JSON is YAML, and Verdaccio only reads `.yaml` config files.
    await writeFile(configPath, JSON.stringify(config, null, 2))
    const verdaccioPath = createRequire(import.meta.url).resolve('verdaccio')
    const launch: Launch = async (port) => {
      const forked = fork('-e', [LAUNCHER, verdaccioPath, configPath, String(port)], {
        cwd: dir,
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
        execArgv: [],
        env: peerEnv({ NODE_ENV: 'production', ...options.env }),
      })
      const started = new ChildPeer(`verdaccio ${role}`, forked)
      try {
        return { child: started, port: await waitForPort(forked, started, options.bootTimeoutMs ?? 30_000) }
      } catch (error) {
        await started.stop()
        throw error
      }
    }
    const launched = await launch(0)
    child = launched.child
    const port = launched.port
    const origin = `${https ? 'https' : 'http'}://127.0.0.1:${port}`
    const peer = new VerdaccioPeer({ role, origin, port, dir, storageDir, ca, ownsCa, process: child, launch })
    try {
      await waitForPing(peer)
    } catch (error) {
      await peer.stop()
      throw error
    }
    return peer
  } catch (error) {
    await child?.stop()
    await rm(dir, { recursive: true, force: true })
    if (ownsCa) await ca?.remove()
    throw error
  }
}

function waitForPort(forked: ReturnType<typeof fork>, child: ChildPeer, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`verdaccio did not listen within ${timeoutMs} ms:\n${child.output}`)), timeoutMs)
    forked.once('message', (message: { port?: unknown }) => {
      clearTimeout(timer)
      if (typeof message.port === 'number') resolve(message.port)
      else reject(new Error(`verdaccio sent an unexpected message: ${JSON.stringify(message)}`))
    })
    void child.exited.then((exit) => {
      clearTimeout(timer)
      reject(new Error(`verdaccio exited during boot (${exit.code ?? exit.signal}):\n${child.output}`))
    })
  })
}

async function waitForPing(peer: VerdaccioPeer): Promise<void> {
  const response = await request(`${peer.origin}/-/ping`, { dispatcher: peer.dispatcher })
  await response.body.dump()
  if (response.statusCode !== 200) throw new Error(`verdaccio ping answered ${response.statusCode}`)
}
