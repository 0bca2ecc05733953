/**
 * Starts the proxy role in this process on a free port, with a recording
 * logger, and stops it at teardown even when the test fails.
 */
import { writeFile, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Agent, request } from 'undici'
import YAML from 'yaml'
import { readBuildInfo } from '../../engine/build-info.js'
import { systemClock, type Clock } from '../../engine/clock.js'
import type { Config } from '../../engine/config/config.js'
import { loadConfig } from '../../engine/config/load.js'
import { formatProblems } from '../../engine/config/problems.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { TraceContext } from '../../engine/telemetry/trace-context.js'
import { startProxy } from '../../server/roles/proxy.js'
import type { RunningRole } from '../../server/roles/role-context.js'
import { freePort } from './ports.js'

export interface TestProxy {
  readonly url: string
  readonly port: number
  readonly config: Config
  readonly logger: RecordingLogger
  readonly role: RunningRole
  get(path: string, headers?: Record<string, string>): Promise<TestResponse>
  fetch(method: string, path: string, options?: { headers?: Record<string, string>; body?: string | Uint8Array }): Promise<TestResponse>
}

export interface TestResponse {
  readonly status: number
  readonly headers: Record<string, string | string[] | undefined>
  readonly body: Buffer
  json(): unknown
}

interface Teardown { teardown(fn: () => unknown): void }

export interface StartOptions {
  /** The configuration document; `server.port` and `server.baseUrl` are filled in. */
  readonly document?: Record<string, unknown>
  readonly env?: Record<string, string>
  readonly clock?: Clock
  /**
   * An edge token (`server.edgeTokens`, added to any the document sets):
   * `fetch` and `get` send it as the bearer unless a request sets its own
   * Authorization. A publish target needs one (the relay refuses to boot
   * without edge tokens).
   */
  readonly edgeToken?: string
  /** Leave `server.baseUrl` unset: artifact URLs then follow each request's origin. */
  readonly unsetBaseUrl?: boolean
}

/** A document whose js mount points at a placeholder public upstream that is never contacted. */
export const OFFLINE_JS_MOUNT = { js: { upstreams: { public: { url: 'https://upstream.invalid/' } }, rules: [{ rule: 'AllowIfOlderThan', seconds: 86400 }] } }

export async function startTestProxy(t: Teardown, options: StartOptions = {}): Promise<TestProxy> {
  const port = await freePort()
  const dir = await mkdtemp(join(tmpdir(), 'proxy-test-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  // One core: tests start many proxies on a shared 2-core machine.
  const givenCache = options.document?.['cache'] as Record<string, unknown> | undefined
  // The kept documents go to this proxy's own folder (not ./var/warm of the checkout, shared by every test that runs).
  const cache = { warmPath: join(dir, 'warm'), ...givenCache }
  const document: Record<string, unknown> = { mounts: OFFLINE_JS_MOUNT, runtime: { cores: 1 }, queue: { path: join(dir, 'queue') }, store: { path: join(dir, 'store') }, ...options.document, cache }
  const given = document['server'] as { edgeTokens?: string[] } | undefined
  const edgeTokens = options.edgeToken === undefined ? {} : { edgeTokens: [...(given?.edgeTokens ?? []), options.edgeToken] }
  const server = { host: '127.0.0.1', ...given, ...edgeTokens, port, ...(options.unsetBaseUrl === true ? {} : { baseUrl: `http://127.0.0.1:${port}` }) }
  const file = join(dir, 'config.yaml')
  await writeFile(file, YAML.stringify({ ...document, server }))
  const loaded = loadConfig({ configPath: file, env: options.env ?? {}, npmRegistry: () => undefined })
  if (!loaded.ok) throw new Error(formatProblems(loaded.problems))
  const logger = new RecordingLogger()
  const build = readBuildInfo()
  const role = await startProxy({
    config: loaded.config,
    logger,
    clock: options.clock ?? systemClock,
    identity: { service: 'test', env: 'test', version: build.version, host: 'test' },
    build,
    trace: new TraceContext(),
    env: options.env ?? {},
  })
  const dispatcher = new Agent({ keepAliveTimeout: 10, pipelining: 0 })
  t.teardown(async () => {
    role.door.stopAccepting()
    await role.release()
    await dispatcher.close()
  })
  const url = `http://127.0.0.1:${port}`
  const fetchIt = async (method: string, path: string, opts: { headers?: Record<string, string>; body?: string | Uint8Array } = {}): Promise<TestResponse> => {
    const headers = options.edgeToken === undefined || Object.keys(opts.headers ?? {}).some((name) => name.toLowerCase() === 'authorization')
      ? opts.headers
      : { ...opts.headers, authorization: `Bearer ${options.edgeToken}` }
    const res = await request(`${url}${path}`, { method: method as 'GET', headers, body: opts.body, dispatcher })
    const body = Buffer.from(await res.body.arrayBuffer())
    return { status: res.statusCode, headers: res.headers, body, json: () => JSON.parse(body.toString('utf8')) as unknown }
  }
  return { url, port, config: loaded.config, logger, role, get: (path, headers) => fetchIt('GET', path, { headers }), fetch: fetchIt }
}
