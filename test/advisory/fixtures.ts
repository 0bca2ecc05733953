/**
 * Real advisory data for the advisory tests (see ../shared/data/README.md):
 * the npm OSV samples, the PYSEC YAML samples read as JSON (timestamps kept
 * as strings, like the derived zip), PyPI MAL records from the
 * malicious-packages zip, and an EPSS feed in the FIRST daily format built
 * from the EMBA dump of real scores, gzip-compressed.
 */
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import YAML from 'yaml'
import yauzl from 'yauzl'
import type { OsvRecord } from '../../engine/advisory/artifact/osv-record.js'
import { makeZip } from './zip-writer.js'
import { sharedDataDir } from '../../bench/peers/shared-data.js'

export const DATA = sharedDataDir()
export const NPM_SAMPLES = join(DATA, 'osv/npm/samples')
export const PYSEC_SAMPLES = join(DATA, 'osv/pypi/samples/pysec')
export const NPM_ALL_ZIP = join(DATA, 'osv/npm/all.zip')
export const PYPI_MAL_ZIP = join(DATA, 'osv/pypi/ossf-malicious-packages-pypi.zip')
export const PYSEC_ZIP = join(DATA, 'osv/pypi/pysec-yaml-to-json.derived.zip')
export const EPSS_VULS = join(DATA, 'epss/first-csv-format/vuls-fixtures')

export function npmSamples(): OsvRecord[] {
  return readdirSync(NPM_SAMPLES).filter((f) => f.endsWith('.json')).sort()
    .map((f) => JSON.parse(readFileSync(join(NPM_SAMPLES, f), 'utf8')) as OsvRecord)
}

export function pysecSamples(): OsvRecord[] {
  return readdirSync(PYSEC_SAMPLES).filter((f) => f.endsWith('.yaml')).sort()
    // The core (YAML 1.2) schema leaves timestamps as strings, as the export's JSON has them.
    .map((f) => YAML.parse(readFileSync(join(PYSEC_SAMPLES, f), 'utf8'), { schema: 'core' }) as OsvRecord)
}

/** Named entries of a zip, parsed as JSON (small reads from the real archives). */
export async function zipRecords(path: string, pick: (name: string) => boolean): Promise<OsvRecord[]> {
  const zip = await yauzl.openPromise(path, { lazyEntries: true })
  const out: OsvRecord[] = []
  try {
    for await (const entry of zip.eachEntry()) {
      if (!pick(entry.fileName)) continue
      const chunks: Buffer[] = []
      for await (const c of await zip.openReadStreamPromise(entry)) chunks.push(c as Buffer)
      out.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as OsvRecord)
    }
  } finally {
    zip.close()
  }
  return out
}

/** An OSV export zip of records, flat `<ID>.json` names sorted by id. */
export function exportZip(records: readonly OsvRecord[]): Buffer {
  const sorted = [...records].sort((a, b) => String(a.id).localeCompare(String(b.id)))
  return makeZip(sorted.map((r) => ({ name: `${r.id}.json`, data: Buffer.from(JSON.stringify(r, null, 2)) })))
}

/** EPSS scores of the EMBA dump (real values, 360k CVEs) by CVE id. */
export function embaScores(): Map<string, string> {
  const text = execFileSync('tar', ['-xzOf', join(DATA, 'epss/emba-api-dump/EMBA-EPSS-data-346ef2e.tar.gz'), '--wildcards', 'EPSS_CVE_data/CVE_*_EPSS.csv'], { maxBuffer: 256 * 1024 * 1024 }).toString('utf8')
  const out = new Map<string, string>()
  for (const line of text.split('\n')) {
    const [cve, epss] = line.split(';')
    if (cve !== undefined && epss !== undefined && cve.startsWith('CVE-')) out.set(cve.trim(), String(Number(epss)))
  }
  return out
}

/** The FIRST daily CSV, gzip-compressed, of the given scores. */
export function epssFeedGz(scores: ReadonlyMap<string, string>, scoreDate = '2026-08-16T00:00:00Z'): Buffer {
  const rows = [...scores].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([c, s]) => `${c},${s},0.5`)
  return gzipSync(`#model_version:v2025.03.14,score_date:${scoreDate}\ncve,epss,percentile\n${rows.join('\n')}\n`)
}

export type Route = (req: IncomingMessage, res: ServerResponse) => void

/** A local HTTP server on 127.0.0.1 port 0 serving fixed bodies by path; records requests. */
export async function serve(routes: Record<string, Buffer | Route>): Promise<{ server: Server; base: string; requests: string[] }> {
  const requests: string[] = []
  const server = createServer((req, res) => {
    requests.push(req.url ?? '')
    const path = new URL(req.url ?? '/', 'http://x').pathname
    const route = routes[path]
    if (route === undefined) { res.statusCode = 404; res.end(); return }
    if (typeof route === 'function') { route(req, res); return }
    res.setHeader('content-length', route.length)
    res.end(route)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { server, base: `http://127.0.0.1:${port}`, requests }
}
