/**
 * What the `service dredger` process tests share (dredger-service*.test.ts):
 * two real Verdaccio registries, the mirror target and the private upstream
 * (the private cache), seeded with packages of three versions, and the
 * built binary run as `service dredger` against them. The cases are split
 * over two files so that each stays well inside tap's per-file timeout on a
 * busy 2-core machine (every case boots the role, some of them twice).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request } from 'undici'
import YAML from 'yaml'
import { freePort } from '../helpers/ports.js'
import { runService, type ServiceRun } from '../helpers/service-process.js'
import { publishFixture } from '../peers/publish-fixture.js'
import { startVerdaccio, type VerdaccioPeer } from '../../bench/peers/verdaccio.js'

type Teardown = { teardown(fn: () => unknown): void }

export const VERSIONS = ['1.0.0', '1.0.1', '1.0.2']

export interface DredgerOptions {
  readonly rules: readonly Record<string, unknown>[]
  readonly dredger?: Record<string, unknown>
  /** Default: both inventories. */
  readonly mirrorUrl?: string
  readonly withPrivate?: boolean
  /** The configuration's `policy` section (a policy document for the Dredger to follow). */
  readonly policy?: Record<string, unknown>
}

export class DredgerRig {
  readonly mirror: VerdaccioPeer
  readonly priv: VerdaccioPeer
  readonly #mirrorToken: string
  readonly #privToken: string
  readonly #dir: string
  #configs = 0

  private constructor(mirror: VerdaccioPeer, priv: VerdaccioPeer, mirrorToken: string, privToken: string, dir: string) {
    this.mirror = mirror
    this.priv = priv
    this.#mirrorToken = mirrorToken
    this.#privToken = privToken
    this.#dir = dir
  }

  static async start(t: Teardown): Promise<DredgerRig> {
    const [mirror, priv] = await Promise.all([startVerdaccio({ role: 'private' }), startVerdaccio({ role: 'private' })])
    t.teardown(() => Promise.all([mirror.stop(), priv.stop()]))
    const [mirrorToken, privToken] = await Promise.all([mirror.publisherToken(), priv.publisherToken()])
    const dir = await mkdtemp(join(tmpdir(), 'dredger-test-'))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    return new DredgerRig(mirror, priv, mirrorToken, privToken, dir)
  }

  async seed(name: string, peers: readonly VerdaccioPeer[] = [this.mirror, this.priv]): Promise<void> {
    for (const peer of peers) for (const version of VERSIONS) await publishFixture(peer, { name, version })
  }

  /** Starts `service dredger` (with `extra` arguments such as `--dry-run`) on a port of its own. */
  async dredger(t: Teardown, options: DredgerOptions, extra: readonly string[] = []): Promise<{ run: ServiceRun, port: number }> {
    const port = await freePort()
    const run = runService(t, ['dredger', ...extra, '--config', await this.#configFile(port, options)])
    return { run, port }
  }

  async #configFile(port: number, options: DredgerOptions): Promise<string> {
    const file = join(this.#dir, `config-${++this.#configs}.yaml`)
    const document = {
      server: { host: '127.0.0.1', port },
      runtime: { cores: 1 },
      dredger: { cycleSeconds: 3600, ...options.dredger },
      ...(options.policy === undefined ? {} : { policy: options.policy }),
      mounts: {
        js: {
          upstreams: {
            ...(options.withPrivate === false ? {} : { private: { url: this.priv.url, token: this.#privToken } }),
            public: { url: 'https://upstream.invalid/' },
          },
          mirror: { target: options.mirrorUrl ?? this.mirror.url, token: this.#mirrorToken },
          rules: options.rules,
        },
      },
    }
    await writeFile(file, YAML.stringify(document))
    return file
  }
}

/** The versions a registry's document names, sorted; none when it answers no document. */
export async function held(peer: VerdaccioPeer, name: string): Promise<string[]> {
  const res = await request(`${peer.origin}/${name}`)
  const text = await res.body.text()
  return res.statusCode === 200 ? Object.keys((JSON.parse(text) as { versions: object }).versions).sort() : []
}

/** The status a registry answers for one version's tarball. */
export async function tarball(peer: VerdaccioPeer, name: string, version: string): Promise<number> {
  const res = await request(`${peer.origin}/${name}/-/${name}-${version}.tgz`)
  await res.body.dump()
  return res.statusCode
}

/** The records of one log message a run printed. */
export function logLines(run: ServiceRun, message: string): { status: string, data: Record<string, unknown> }[] {
  const lines: { status: string, data: Record<string, unknown> }[] = []
  for (const line of run.stdout().split('\n')) {
    try {
      const entry = JSON.parse(line) as { message?: string, status: string, data: Record<string, unknown> }
      if (entry.message === message) lines.push(entry)
    } catch { /* not a log line */ }
  }
  return lines
}

export async function readyz(port: number): Promise<{ status: number, body: { mounts: Record<string, string> } }> {
  const res = await request(`http://127.0.0.1:${port}/readyz`)
  return { status: res.statusCode, body: await res.body.json() as { mounts: Record<string, string> } }
}

/** SIGTERM, then the exit. */
export async function stop(run: ServiceRun): Promise<void> {
  run.child.kill('SIGTERM')
  await run.exited
}
