/**
 * The rig's own check: Verdaccio serving a real packument against nginx
 * serving the very same bytes as a static file. Verdaccio stands in the
 * "project" column here; the proxy's scenarios put the proxy there and keep
 * Verdaccio and nginx as baselines (bench/lib/baselines.ts).
 *
 * The packument is placed in Verdaccio's storage (by default the mirror's
 * express document from ../shared/data); the bytes nginx serves are what
 * Verdaccio answered for it, so both send identical bodies. Requests ask for
 * the full document (`Accept: application/json`) without compression.
 * BENCH_PACKUMENT picks another fixture; BENCH_DURATION_SECONDS and
 * BENCH_CONNECTIONS size the load.
 */
import { createHash } from 'node:crypto'
import { FIXTURE_PACKUMENTS, readPackument, type FixturePackumentName } from '../peers/shared-data.js'
import { loadShapeFromEnv, measureNginxStatic, measureVerdaccioPackument } from '../lib/baselines.js'
import { loadRows, loadWarnings } from '../lib/load-rows.js'
import type { Scenario, ScenarioResult } from '../lib/scenario.js'

function packumentName(): FixturePackumentName {
  const chosen = process.env.BENCH_PACKUMENT ?? 'express'
  const known = FIXTURE_PACKUMENTS.find((n) => n === chosen)
  if (known === undefined) throw new Error(`BENCH_PACKUMENT must be one of ${FIXTURE_PACKUMENTS.join(', ')}`)
  return known
}

const scenario: Scenario = {
  name: 'verdaccio-packument',
  async run(): Promise<ScenarioResult> {
    const name = packumentName()
    const shape = loadShapeFromEnv({ accept: 'application/json' })
    const verdaccio = await measureVerdaccioPackument(await readPackument(name), shape)
    // Verdaccio is this scenario's subject: without it there is nothing to compare.
    if (typeof verdaccio === 'string') throw new Error(verdaccio)
    const nginx = await measureNginxStatic(`/${name.replace('/', '%2f')}`, verdaccio.body, 'application/json', shape)
    const { load } = verdaccio.measured
    const digest = createHash('sha256').update(verdaccio.body).digest('hex').slice(0, 16)
    return {
      title: `Verdaccio (project column) serving a real packument (${name}) vs nginx serving the same bytes as a static file`,
      rows: loadRows('GET packument', verdaccio.measured, { nginx }),
      ...(verdaccio.measured.peakRssBytes === undefined ? {} : { peakRssBytes: verdaccio.measured.peakRssBytes }),
      notes: [
        `${name} packument, ${verdaccio.body.length} bytes as Verdaccio renders it (sha256 ${digest}…), uncompressed, Accept: application/json`,
        ...loadWarnings('verdaccio', load),
        ...(typeof nginx === 'string' ? [] : loadWarnings('nginx', nginx.load)),
        `load by ${load.tool} from its own process, ${shape.connections} connections, ${shape.durationSeconds} s after a 2 s warm-up; nginx runs 1 worker; peak RSS is VmHWM (nginx: master + worker)`,
      ],
    }
  },
}

export default scenario
