/**
 * The rig's own check: Verdaccio serving a real packument against nginx
 * serving the very same bytes as a static file. Verdaccio stands in the
 * "project" column here; the proxy's scenarios put the proxy there and keep
 * Verdaccio and nginx as baselines.
 *
 * The packument is placed in Verdaccio's storage (it is the mirror's express
 * document from ../shared/data, 565 KB); the bytes nginx serves are what
 * Verdaccio answered for it, so both send identical bodies. Requests ask for
 * the full document (`Accept: application/json`) without compression.
 * BENCH_PACKUMENT picks another fixture; BENCH_DURATION_SECONDS and
 * BENCH_CONNECTIONS size the load.
 */
import { createHash } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request } from 'undici'
import { FIXTURE_PACKUMENTS, readPackument, type FixturePackumentName } from '../../test/peers/shared-data.js'
import { startVerdaccio } from '../../test/peers/verdaccio.js'
import { runLoad, type LoadOptions } from '../lib/load.js'
import { loadRows, loadWarnings, type MeasuredServer } from '../lib/load-rows.js'
import { isUnavailable, startNginx } from '../lib/nginx.js'
import { peakRssBytes } from '../lib/peak-rss.js'
import type { Scenario, ScenarioResult } from '../lib/scenario.js'

const HEADERS = { accept: 'application/json' }

function packumentName(): FixturePackumentName {
  const chosen = process.env.BENCH_PACKUMENT ?? 'express'
  const known = FIXTURE_PACKUMENTS.find((n) => n === chosen)
  if (known === undefined) throw new Error(`BENCH_PACKUMENT must be one of ${FIXTURE_PACKUMENTS.join(', ')}`)
  return known
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}

async function fetchBytes(url: string): Promise<{ status: number, body: Buffer }> {
  const response = await request(url, { headers: HEADERS })
  return { status: response.statusCode, body: Buffer.from(await response.body.arrayBuffer()) }
}

async function measure(url: string, pid: () => Promise<number | undefined>): Promise<MeasuredServer> {
  const options: LoadOptions = {
    url,
    headers: HEADERS,
    connections: Number(process.env.BENCH_CONNECTIONS ?? 8),
    durationSeconds: Number(process.env.BENCH_DURATION_SECONDS ?? 8),
  }
  // A short warm-up so the JIT and file caches are settled before the measured run.
  await runLoad({ ...options, durationSeconds: 2 })
  const load = await runLoad(options)
  return { load, peakRssBytes: await pid() }
}

const scenario: Scenario = {
  name: 'verdaccio-packument',
  async run(): Promise<ScenarioResult> {
    const name = packumentName()
    const packument = await readPackument(name)
    const verdaccio = await startVerdaccio({ role: 'private', packuments: [packument] })
    const staticRoot = await mkdtemp(join(tmpdir(), 'bench-static-'))
    try {
      const path = `/${name.replace('/', '%2f')}`
      const served = await fetchBytes(`${verdaccio.origin}${path}`)
      if (served.status !== 200) throw new Error(`verdaccio answered ${served.status} for ${name}`)
      const fileName = name.replace('/', '%2f')
      await writeFile(join(staticRoot, fileName), served.body)

      const notes = [
        `${name} packument, ${served.body.length} bytes as Verdaccio renders it (sha256 ${sha256(served.body).slice(0, 16)}…), uncompressed, Accept: application/json`,
      ]
      const project = await measure(`${verdaccio.origin}${path}`, () => peakRssBytes(verdaccio.pid))
      notes.push(...loadWarnings('verdaccio', project.load))

      let nginx: MeasuredServer | string
      const server = await startNginx({ kind: 'static', root: staticRoot, defaultType: 'application/json' })
      if (isUnavailable(server)) {
        nginx = server.unavailable
      } else {
        try {
          const check = await fetchBytes(`${server.origin}/${encodeURIComponent(fileName)}`)
          if (!check.body.equals(served.body)) throw new Error('nginx does not serve the same bytes as Verdaccio')
          nginx = await measure(`${server.origin}/${encodeURIComponent(fileName)}`, () => server.peakRssBytes())
          notes.push(...loadWarnings('nginx', nginx.load))
        } finally {
          await server.stop()
        }
      }
      notes.push(`load by ${project.load.tool}, ${process.env.BENCH_CONNECTIONS ?? 8} connections, ${process.env.BENCH_DURATION_SECONDS ?? 8} s after a 2 s warm-up; nginx runs 1 worker; RSS is VmHWM (nginx: master + worker)`)
      const result: ScenarioResult = {
        title: `Verdaccio serving a real packument (${name}) vs nginx serving the same bytes as a static file`,
        rows: loadRows('GET packument', project, { nginx }),
        notes,
        ...(project.peakRssBytes === undefined ? {} : { peakRssBytes: project.peakRssBytes }),
      }
      return result
    } finally {
      await verdaccio.stop()
      await rm(staticRoot, { recursive: true, force: true })
    }
  },
}

export default scenario
