/**
 * Measured HTTP servers for scenarios: one load run (after a warm-up)
 * against any URL, and the two standing baselines ready-made, nginx serving
 * bytes as static files and Verdaccio serving a packument from its storage.
 * A baseline that cannot run comes back as a string saying why, which the
 * table prints as unavailable.
 */
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { request } from 'undici'
import { startVerdaccio, type PlacedPackument } from '../peers/verdaccio.js'
import { runLoad, type LoadOptions } from './load.js'
import type { MeasuredServer } from './load-rows.js'
import { isUnavailable, startNginx } from './nginx.js'
import { peakRssBytes } from './peak-rss.js'

export type LoadShape = Omit<LoadOptions, 'url'> & {
  /** Seconds of unmeasured load first; default 2. */
  readonly warmupSeconds?: number
}

/** The load shape from BENCH_CONNECTIONS and BENCH_DURATION_SECONDS (defaults 8 and 8). */
export function loadShapeFromEnv(headers: Readonly<Record<string, string>> = {}): LoadShape {
  return {
    headers,
    connections: Number(process.env.BENCH_CONNECTIONS ?? 8),
    durationSeconds: Number(process.env.BENCH_DURATION_SECONDS ?? 8),
  }
}

export async function measureServer(url: string, shape: LoadShape, peak: () => Promise<number | undefined>): Promise<MeasuredServer> {
  const warmup = shape.warmupSeconds ?? 2
  if (warmup > 0) await runLoad({ ...shape, url, durationSeconds: warmup, latencyHistogram: false })
  const load = await runLoad({ ...shape, url })
  return { load, peakRssBytes: await peak() }
}

export async function fetchBytes(url: string, headers: Readonly<Record<string, string>> = {}): Promise<{ status: number, body: Buffer }> {
  const response = await request(url, { headers })
  return { status: response.statusCode, body: Buffer.from(await response.body.arrayBuffer()) }
}

/**
 * nginx serving `bytes` at `path` (a URL path, e.g. `/express`) as a static
 * file, checked to answer with exactly those bytes before it is measured.
 */
export async function measureNginxStatic(path: string, bytes: Uint8Array, contentType: string, shape: LoadShape): Promise<MeasuredServer | string> {
  const root = await mkdtemp(join(tmpdir(), 'bench-static-'))
  try {
    const file = join(root, ...decodeURIComponent(path).split('/').filter((s) => s !== ''))
    await mkdir(dirname(file), { recursive: true })
    await writeFile(file, bytes)
    const server = await startNginx({ kind: 'static', root, defaultType: contentType })
    if (isUnavailable(server)) return server.unavailable
    try {
      const check = await fetchBytes(`${server.origin}${path}`)
      if (check.status !== 200 || !check.body.equals(bytes)) return `nginx answered ${check.status} with other bytes for ${path}`
      return await measureServer(`${server.origin}${path}`, shape, () => server.peakRssBytes())
    } finally {
      await server.stop()
    }
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

export interface VerdaccioMeasurement {
  readonly measured: MeasuredServer
  /** The body Verdaccio answered with, for a baseline that must serve the same bytes. */
  readonly body: Buffer
}

/** Verdaccio serving `packument` (placed in its storage) at `/<name>`, requested with `shape.headers`. */
export async function measureVerdaccioPackument(packument: PlacedPackument, shape: LoadShape): Promise<VerdaccioMeasurement | string> {
  let verdaccio
  try {
    verdaccio = await startVerdaccio({ role: 'private', packuments: [packument] })
  } catch (error) {
    return `verdaccio did not start: ${String(error)}`
  }
  try {
    const url = `${verdaccio.origin}/${packument.name.replace('/', '%2f')}`
    const served = await fetchBytes(url, shape.headers)
    if (served.status !== 200) return `verdaccio answered ${served.status} for ${packument.name}`
    const measured = await measureServer(url, shape, () => peakRssBytes(verdaccio.pid))
    return { measured, body: served.body }
  } finally {
    await verdaccio.stop()
  }
}
