/**
 * What the policy-document tests on a real proxy process share
 * (test/server/policy-reload.test.ts, policy-store-reload.test.ts): a public
 * upstream over https serving one packument whose versions were published
 * at the given instants, the environment of a js mount on it, a proxy
 * process started on a free port, and the three things those tests read
 * from it: the why route, the versions its packument lists, and how many
 * log lines name an event. Every process and peer stops at teardown.
 */
import type { Test } from 'tap'
import { request } from 'undici'
import { makeTestCa } from '../../bench/peers/tls.js'
import { startMisbehavingUpstream, type MisbehavingUpstream } from '../peers/misbehaving-upstream.js'
import { freePort } from './ports.js'
import { runService, type ServiceRun } from './service-process.js'

/** RFC 3339 to the second, as a policy document writes instants. */
export const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')

export interface PolicyUpstream {
  readonly upstream: MisbehavingUpstream
  /** The environment of a one-core js mount whose public upstream it is (rules and policy source are the test's). */
  readonly env: Record<string, string>
}

/** Starts the upstream with `name`'s packument: each version published at its instant (ISO), the last one `latest`. */
export async function startPolicyUpstream(t: Test, name: string, published: Readonly<Record<string, string>>): Promise<PolicyUpstream> {
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const upstream = await startMisbehavingUpstream({ tls: ca })
  t.teardown(() => upstream.stop())
  const versions = Object.keys(published)
  const times = Object.values(published).sort()
  const manifest = (v: string) => ({ name, version: v, dist: { tarball: `${upstream.origin}/${name}/-/${name}-${v}.tgz`, integrity: 'sha512-AAAA' } })
  upstream.script(`/${name}`, {
    kind: 'respond',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      name,
      versions: Object.fromEntries(versions.map((v) => [v, manifest(v)])),
      'dist-tags': { latest: versions[versions.length - 1] },
      time: { created: times[0], modified: times[times.length - 1], ...published },
    }),
  })
  return {
    upstream,
    env: {
      SERVICE_RUNTIME__CORES: '1',
      SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: `${upstream.origin}/`,
      SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__CA_FILE: ca.caFile,
      SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__ALLOW_INTERNAL_RANGES: '["127.0.0.0/8"]',
    },
  }
}

export interface PolicyProxy {
  readonly run: ServiceRun
  /** `http://127.0.0.1:{port}` */
  readonly base: string
  /** The why route's answer for `name@version`. */
  why(version: string): Promise<Record<string, unknown>>
  /** The versions the packument lists; one whose every public version is withheld is the 403 that says so (asserted), listing none. */
  listed(): Promise<string[]>
  /** Waits until `count` log lines contain `text`. */
  occurrences(text: string, count: number): Promise<void>
}

/** Starts `service proxy` with `env` on a free loopback port and waits until it listens. */
export async function startPolicyProxy(t: Test, name: string, env: Record<string, string>): Promise<PolicyProxy> {
  const port = await freePort()
  const run = runService(t, ['proxy'], { ...env, SERVICE_SERVER__PORT: String(port), SERVICE_SERVER__HOST: '127.0.0.1' })
  await run.waitForOutput('proxy listening', 120_000)
  const base = `http://127.0.0.1:${port}`
  return {
    run,
    base,
    why: async (version) => await (await request(`${base}/js/-/why/${name}/${version}`)).body.json() as Record<string, unknown>,
    listed: async () => {
      const answer = await request(`${base}/js/${name}`)
      const body = await answer.body.json() as { versions?: Record<string, unknown>; error?: string }
      if (answer.statusCode === 403) {
        t.match(body.error, /every public version is withheld by policy/)
        return []
      }
      t.equal(answer.statusCode, 200)
      return Object.keys(body.versions ?? {})
    },
    occurrences: (text, count) => occurrences(run, text, count),
  }
}

async function occurrences(run: ServiceRun, text: string, count: number): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (run.stdout().split('\n').filter((l) => l.includes(text)).length >= count) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`fewer than ${count} lines with "${text}"; stdout: ${run.stdout()}; stderr: ${run.stderr()}`)
}
