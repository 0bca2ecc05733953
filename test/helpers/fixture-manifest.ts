/**
 * Fixture histories for the history-rule route tests (history-gates,
 * signal-gates, why-route): version manifests for scripted upstream
 * packuments, and the https upstream serving them with a proxy in front.
 */
import type { Test } from 'tap'
import { makeTestCa } from '../../bench/peers/tls.js'
import { startMisbehavingUpstream, type MisbehavingUpstream } from '../peers/misbehaving-upstream.js'
import { startTestProxy, type TestProxy } from './proxy.js'

/**
 * A version manifest: its name, version and a `dist` whose tarball is
 * served by `origin`, with a made-up integrity and shasum, plus whatever
 * else the history needs (`scripts`, `dependencies`, trust evidence in `dist`).
 */
export function fixtureManifest(origin: string, name: string, version: string, extra: Record<string, unknown> = {}, dist: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    version,
    dist: {
      integrity: `sha512-${Buffer.from(`${name}@${version}`.padEnd(64, '.')).toString('base64')}`,
      shasum: '0123456789abcdef0123456789abcdef01234567',
      tarball: `${origin}/${name}/-/${name}-${version}.tgz`,
      ...dist,
    },
    ...extra,
  }
}

export const HOUR = 3_600_000
export const DAY = 24 * HOUR

/** A scripted https upstream of fixture histories and the proxy in front of it (the history-rule route tests). */
export interface HistoryUpstream {
  readonly upstream: MisbehavingUpstream
  /** The instant `agoMs` before the start, as a packument's `time` writes it. */
  at(agoMs: number): string
  /** A version manifest whose tarball this upstream serves (fixtureManifest). */
  manifest(name: string, version: string, extra?: Record<string, unknown>, dist?: Record<string, unknown>): Record<string, unknown>
  /** Scripts `/{name}`: `versions` published at `time`, created 40 days ago and modified `modifiedAgoMs` ago (default an hour). */
  serve(name: string, latest: string, versions: Record<string, Record<string, unknown>>, time: Record<string, string>, modifiedAgoMs?: number): void
  /** A proxy whose js mount reads this upstream under `rules`. */
  proxy(rules: readonly Record<string, unknown>[]): Promise<TestProxy>
}

/** Starts the upstream (and its test CA) for `t`; both stop at its teardown, as does any proxy it starts. */
export async function startHistoryUpstream(t: Test): Promise<HistoryUpstream> {
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const upstream = await startMisbehavingUpstream({ tls: ca })
  t.teardown(() => upstream.stop())
  const now = Date.now()
  const at = (agoMs: number): string => new Date(now - agoMs).toISOString()
  return {
    upstream,
    at,
    manifest: (name, version, extra, dist) => fixtureManifest(upstream.origin, name, version, extra, dist),
    serve: (name, latest, versions, time, modifiedAgoMs = HOUR) => {
      upstream.script(`/${name}`, {
        kind: 'respond',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name, 'dist-tags': { latest }, versions, time: { created: at(40 * DAY), modified: at(modifiedAgoMs), ...time } }),
      })
    },
    proxy: (rules) => startTestProxy(t, {
      document: { mounts: { js: { upstreams: { public: { url: `${upstream.origin}/`, caFile: ca.caFile, allowInternalRanges: ['127.0.0.0/8'] } }, rules } } },
    }),
  }
}
