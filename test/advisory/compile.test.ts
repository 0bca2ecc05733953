import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { ManualClock } from '../doubles/manual-clock.js'
import { isServiceError } from '../../engine/errors.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { ADVISORY_COMPILED, compileEcosystem, EPSS_FEED_UNAVAILABLE, METADATA_KEYS } from '../../engine/advisory/pilot/compile.js'
import { loadAdvisoryArtifact } from '../../engine/advisory/artifact/compiled-database.js'
import type { AdvisoryDatabase } from '../../engine/advisory/artifact/database.js'
import type { OsvRecord } from '../../engine/advisory/artifact/osv-record.js'
import {
  DATA, embaScores, epssFeedGz, exportZip, npmSamples, PYPI_MAL_ZIP, pysecSamples, serve, zipRecords,
} from './fixtures.js'

const FIXTURES = join(DATA, 'osv/fixtures')
const readJson = (p: string): OsvRecord => JSON.parse(readFileSync(p, 'utf8')) as OsvRecord

/**
 * The OSV schema's own example of an npm record with an ECOSYSTEM range
 * (GHSA-r9p9-mrjm-926w, elliptic, docs/schema.md "NPM vulnerability in GitHub
 * database"), trimmed to the fields the compiler reads.
 */
const ELLIPTIC: OsvRecord = {
  id: 'GHSA-r9p9-mrjm-926w', modified: '2021-03-08T16:02:43Z', aliases: ['CVE-2020-28498'],
  affected: [{ package: { ecosystem: 'npm', name: 'elliptic' }, ranges: [{ type: 'ECOSYSTEM', events: [{ introduced: '0' }, { fixed: '6.5.4' }] }] }],
}

const npmRecords = [
  ...npmSamples(),
  ...['equals_with_patch', 'npm_greater_than', 'less_than_equals_no_patch', 'greater_than_equals_no_patch']
    .map((f) => readJson(join(FIXTURES, `osv-schema-ghsa-conversion/${f}.osv.json`))),
  ELLIPTIC,
]

const ids = (list: readonly { id: string }[]): string[] => list.map((m) => m.id).sort()

async function setup(t: Test) {
  // 123bla's MAL-2024-10238 comes from the osv-linter fixture instead (an export holds each id once).
  const pypiMal = await zipRecords(PYPI_MAL_ZIP, (n) => /\/(admcheck|admcheck2)\//.test(n))
  const pypiRecords = [
    ...pysecSamples(), ...pypiMal,
    ...['GHSA-9v2f-6vcg-3hgv', 'MAL-2024-10238', 'PYSEC-2023-74'].map((id) => readJson(join(FIXTURES, `osv-linter/${id}.json`))),
  ]
  const emba = embaScores()
  const feed = epssFeedGz(emba)
  let drops = 0
  let cuts = 0
  const peer = await serve({
    // Sends the headers and half the body, then drops the connection, once.
    '/epss-cut/feed.csv.gz': (req, res) => {
      res.setHeader('content-length', feed.length)
      if (cuts++ === 0) { res.write(feed.subarray(0, feed.length >> 1), () => req.socket.destroy()); return }
      res.end(feed)
    },
    // Drops the connection of the first request without answering; answers the second.
    '/epss-flaky/feed.csv.gz': (req, res) => {
      if (drops++ === 0) { req.socket.destroy(); return }
      res.end(feed)
    },
    '/osv/npm/all.zip': exportZip(npmRecords),
    '/osv/PyPI/all.zip': exportZip(pypiRecords),
    '/epss/epss_scores-current.csv.gz': feed,
    '/epss-down/feed.csv.gz': (_req, res) => { res.statusCode = 503; res.end('down') },
    '/epss-bad/feed.csv': Buffer.from(readFileSync(join(DATA, 'epss/first-csv-format/vunnel-fixtures/invalid-header.csv'))),
    '/broken/npm/all.zip': Buffer.from('this is not a zip archive'),
  })
  t.teardown(() => new Promise<void>((resolve) => peer.server.close(() => resolve())))
  const tmp = await mkdtemp(join(tmpdir(), 'advisory-compile-'))
  t.teardown(() => rm(tmp, { recursive: true, force: true }))
  return { peer, tmp, emba, pypiRecords }
}

type Setup = Awaited<ReturnType<typeof setup>>

t.test('compile over HTTP', async (t) => {
  const s: Setup = await setup(t)
  const port = new URL(s.peer.base).port
  const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'))
  const epss = (cve: string): number => Number(s.emba.get(cve))

  t.test('npm: real GHSA and MAL samples', async (t) => {
    const logger = new RecordingLogger()
    const out = await compileEcosystem({
      ecosystem: 'js',
      // Userinfo, query and fragment must never be recorded (SPEC.md 2.9).
      osvExportBaseUrl: `http://reader:s3cret@127.0.0.1:${port}/osv/?token=abc#frag`,
      epssFeedUrl: `${s.peer.base}/epss/epss_scores-current.csv.gz?key=zzz`,
      tmpDir: s.tmp, clock, logger,
    })
    t.equal(out.metadata[METADATA_KEYS.osvSource], `127.0.0.1:${port}`)
    t.equal(out.metadata[METADATA_KEYS.osvSourceUrl], `http://127.0.0.1:${port}/osv/npm/all.zip`)
    t.notMatch(JSON.stringify(out.metadata), /s3cret|reader|token|frag|zzz/, 'no credential anywhere in the metadata')
    t.notMatch(JSON.stringify(logger.records), /s3cret|token=abc|zzz/, 'nor in the logs')
    t.ok(s.peer.requests.includes('/osv/npm/all.zip?token=abc'), 'the query is still sent')
    t.same(logger.find(EPSS_FEED_UNAVAILABLE), [], 'no EPSS warning')
    t.equal(out.metadata[METADATA_KEYS.epssStatus], 'available')
    t.equal(out.metadata[METADATA_KEYS.epssScoreDate], '2026-08-16T00:00:00.000Z')
    t.equal(out.metadata[METADATA_KEYS.compiledAt], '2026-01-01T00:00:00.000Z')
    // Live records with something to match; GSD-2022-1000008 names faker.js with no range and an empty list.
    const live = npmRecords.filter((r) => r.withdrawn === undefined && r.affected?.some((a) => a.package?.ecosystem === 'npm' &&
      ((a.versions?.length ?? 0) > 0 || (a.ranges ?? []).some((x) => x.type !== 'GIT'))))
    t.notOk(live.some((r) => r.id === 'GSD-2022-1000008'))
    t.equal(out.metadata[METADATA_KEYS.rowCount], String(live.length))
    const newest = npmRecords.map((r) => Date.parse(r.modified ?? '')).filter(Number.isFinite).reduce((a, b) => Math.max(a, b))
    t.equal(out.metadata[METADATA_KEYS.newestAdvisoryAt], new Date(newest).toISOString())
    t.equal(out.summary.withdrawn, npmRecords.filter((r) => r.withdrawn !== undefined).length)
    t.equal(logger.find(ADVISORY_COMPILED).length, 1)
    t.same(await readdir(s.tmp), [], 'the downloaded archive is removed')

    const db: AdvisoryDatabase = loadAdvisoryArtifact(out.bytes, new Date('2026-01-01T00:01:00Z'))
    t.equal(db.ecosystem, 'js')
    t.equal(db.metadata.epssStatus, 'available')
    t.equal(db.metadata.osvSourceUrl, out.metadata[METADATA_KEYS.osvSourceUrl])
    t.equal(db.publishedAt?.toISOString(), '2026-01-01T00:01:00.000Z')

    // lodash: GHSA samples with CVE aliases and real EPSS values.
    const at4_17_20 = db.affecting('lodash', '4.17.20')
    t.same(ids(at4_17_20), ['GHSA-29mw-wpgm-hmr9', 'GHSA-35jh-r3h4-6jhm'])
    const redos = at4_17_20.find((m) => m.id === 'GHSA-29mw-wpgm-hmr9')!
    t.same(redos.cves, ['CVE-2020-28500'])
    t.equal(redos.epss, epss('CVE-2020-28500'))
    t.ok(redos.epss! > 0 && redos.epss! < 1)
    t.same(db.affecting('lodash', '4.17.21'), [], '4.17.21 is fixed')
    t.same(ids(db.remediating('lodash', '4.17.21')), ['GHSA-29mw-wpgm-hmr9', 'GHSA-35jh-r3h4-6jhm'])
    t.same(ids(db.remediating('lodash', '4.17.19')), ['GHSA-p6mc-m468-83gw'])
    t.same(db.remediating('lodash', '4.17.20'), [], 'an affected version remediates nothing')
    t.same(ids(db.affecting('lodash', '4.17.11')), ['GHSA-29mw-wpgm-hmr9', 'GHSA-35jh-r3h4-6jhm', 'GHSA-jf85-cpcp-j695', 'GHSA-p6mc-m468-83gw'])
    t.notOk(ids(db.affecting('lodash', '3.6.0')).includes('GHSA-p6mc-m468-83gw'), 'below introduced 3.7.0')
    t.ok(ids(db.affecting('lodash', '3.7.0')).includes('GHSA-p6mc-m468-83gw'), 'at introduced 3.7.0')
    t.equal(db.affecting('lodash', '4.17.11').find((m) => m.id === 'GHSA-jf85-cpcp-j695')?.epss, epss('CVE-2019-10744'))

    // last_affected: lodash.template <= 4.5.0 in GHSA-35jh-r3h4-6jhm; no fixed bound, so nothing remediates.
    t.same(ids(db.affecting('lodash.template', '4.5.0')), ['GHSA-35jh-r3h4-6jhm'])
    t.same(db.affecting('lodash.template', '4.5.1'), [])
    t.same(db.remediating('lodash.template', '4.5.1'), [])

    // Withdrawn records are ignored: MAL-2024-2929 listed react 35.0.0 and 1.0.0.
    t.same(db.affecting('react', '35.0.0'), [])
    t.same(ids(db.affecting('react', '0.4.0')), ['GHSA-g53w-52xc-2j85', 'GHSA-hg79-j56m-fxgv'])
    t.same(ids(db.affecting('react', '0.4.2')), ['GHSA-hg79-j56m-fxgv'], 'second of two ranges')

    // Explicit version list plus range (event-stream 3.3.6), and introduced 0 with no end (flatmap-stream).
    t.same(ids(db.affecting('event-stream', '3.3.6')), ['GHSA-mh6f-8j2x-4483'])
    t.same(db.affecting('event-stream', '4.0.0'), [])
    t.same(ids(db.affecting('flatmap-stream', '0.1.1')), ['GHSA-mh6f-8j2x-4483'])
    t.same(ids(db.affecting('flatmap-stream', 'not-a-version')), ['GHSA-mh6f-8j2x-4483'], 'every version, even unparseable')

    // MAL records with explicit versions.
    const mal = npmRecords.filter((r) => r.id?.startsWith('MAL-') && r.withdrawn === undefined && r.affected?.some((a) => (a.versions?.length ?? 0) > 0))
    t.ok(mal.length >= 5)
    for (const r of mal) {
      const a = r.affected!.find((x) => (x.versions?.length ?? 0) > 0)!
      t.ok(ids(db.affecting(a.package!.name!, a.versions![0]!)).includes(r.id!), `${r.id} lists ${a.package!.name}@${a.versions![0]}`)
    }

    // ECOSYSTEM range for npm compares as semver.
    t.same(ids(db.affecting('elliptic', '6.5.3')), ['GHSA-r9p9-mrjm-926w'])
    t.same(db.affecting('elliptic', '6.5.4'), [])
    t.same(ids(db.remediating('elliptic', '6.5.4')), ['GHSA-r9p9-mrjm-926w'])
    t.same(ids(db.affecting('elliptic', '6.5.4-beta.1')), ['GHSA-r9p9-mrjm-926w'], 'a pre-release of the fix is still affected')

    // Events out of order in the record (mixin-deep): evaluated sorted.
    t.same(ids(db.affecting('mixin-deep', '1.3.1')), ['GHSA-fhjf-83wg-r2j9'])
    t.same(db.affecting('mixin-deep', '1.3.2'), [])
    t.same(ids(db.affecting('mixin-deep', '2.0.0')), ['GHSA-fhjf-83wg-r2j9'])
    t.same(db.affecting('mixin-deep', '2.0.1'), [])
    t.same(ids(db.remediating('mixin-deep', '1.3.2')), ['GHSA-fhjf-83wg-r2j9'])
    t.same(ids(db.remediating('mixin-deep', '2.0.1')), ['GHSA-fhjf-83wg-r2j9'])
    // Pre-release bound: jquery introduced 2.1.1-0.
    t.same(ids(db.affecting('jquery', '2.1.1-beta1')), ['GHSA-mhpp-875w-9cpv'])
    t.same(db.affecting('jquery', '2.1.0'), [])

    t.same(db.affecting('no-such-package', '1.0.0'), [])
    t.same(db.affecting('Lodash', '4.17.20'), [], 'npm names are case-sensitive')
  })

  t.test('PyPI: PYSEC, GHSA and MAL records, PEP 440 ranges', async (t) => {
    const logger = new RecordingLogger()
    const out = await compileEcosystem({
      ecosystem: 'py', osvExportBaseUrl: `${s.peer.base}/osv`, epssFeedUrl: `${s.peer.base}/epss/epss_scores-current.csv.gz`,
      tmpDir: s.tmp, clock, logger,
    })
    t.equal(out.metadata[METADATA_KEYS.osvSourceUrl], `http://127.0.0.1:${port}/osv/PyPI/all.zip`)
    t.same(logger.find(EPSS_FEED_UNAVAILABLE), [], 'no EPSS warning')
    t.equal(out.summary.unparseableRanges, 0)
    const db = loadAdvisoryArtifact(out.bytes)
    t.equal(db.ecosystem, 'py')
    t.equal(db.publishedAt, undefined, 'no publication time given')

    // PYSEC-2007-1: django introduced 0, fixed 1.1, with an explicit list.
    t.ok(ids(db.affecting('django', '1.0.4')).includes('PYSEC-2007-1'))
    t.ok(ids(db.affecting('Django', '1.0.4')).includes('PYSEC-2007-1'), 'PyPI names compare normalised')
    t.notOk(ids(db.affecting('django', '1.1')).includes('PYSEC-2007-1'))
    t.notOk(ids(db.affecting('django', '1.1.0')).includes('PYSEC-2007-1'), '1.1.0 == 1.1 under PEP 440')
    t.ok(ids(db.remediating('django', '1.1')).includes('PYSEC-2007-1'))
    t.same(db.affecting('django', '1.0.4').find((m) => m.id === 'PYSEC-2007-1')?.cves, ['CVE-2007-5712'])
    t.equal(db.affecting('django', '1.0.4').find((m) => m.id === 'PYSEC-2007-1')?.epss, epss('CVE-2007-5712'))

    // PYSEC-2023-74: GIT range ignored, ECOSYSTEM 2.3.0 .. 2.31.0.
    t.ok(ids(db.affecting('requests', '2.30.0')).includes('PYSEC-2023-74'))
    t.ok(ids(db.affecting('requests', '2.31.0rc1')).includes('PYSEC-2023-74'), 'a pre-release of the fix is affected')
    t.notOk(ids(db.affecting('requests', '2.31.0')).includes('PYSEC-2023-74'))
    t.notOk(ids(db.affecting('requests', '2.2.1')).includes('PYSEC-2023-74'), 'the GIT range from 0 does not count')
    t.ok(ids(db.remediating('requests', '2.31.0')).includes('PYSEC-2023-74'))

    // MAL-2024-4732: explicit list with the real trailing-space version "0.0.9 ".
    t.same(ids(db.affecting('admcheck', '0.0.9')), ['MAL-2024-4732'])
    t.same(ids(db.affecting('admcheck', '0.0.9.0')), ['MAL-2024-4732'], 'PEP 440 equality')
    t.same(db.affecting('admcheck', '0.0.6'), [], 'not listed')
    t.same(db.remediating('admcheck', '0.0.6'), [])
    t.same(ids(db.affecting('123bla', '0.0.1')), ['MAL-2024-10238'])
    // GHSA-9v2f-6vcg-3hgv names "Gradio" and lists the unparseable "4.36.-1".
    t.same(ids(db.affecting('gradio', '4.36.1')), ['GHSA-9v2f-6vcg-3hgv'])
    t.same(ids(db.affecting('gradio', '4.36.-1')), ['GHSA-9v2f-6vcg-3hgv'], 'matched by its string')
    t.same(db.affecting('gradio', '4.36.0'), [])
  })

  t.test('an EPSS outage compiles with epss_status=unavailable', async (t) => {
    for (const feedUrl of [`${s.peer.base}/epss-down/feed.csv.gz`, `${s.peer.base}/epss-bad/feed.csv`, 'http://127.0.0.1:1/closed', undefined]) {
      const logger = new RecordingLogger()
      const out = await compileEcosystem({ ecosystem: 'js', osvExportBaseUrl: `${s.peer.base}/osv`, epssFeedUrl: feedUrl, tmpDir: s.tmp, clock, logger })
      t.equal(out.metadata[METADATA_KEYS.epssStatus], 'unavailable', String(feedUrl))
      t.equal(out.metadata[METADATA_KEYS.epssScoreDate], undefined)
      t.equal(out.summary.epssStatus, 'unavailable')
      t.equal(logger.find(EPSS_FEED_UNAVAILABLE).length, 1)
      t.equal(logger.find(EPSS_FEED_UNAVAILABLE)[0]?.level, 'warn')
      const db = loadAdvisoryArtifact(out.bytes)
      t.equal(db.metadata.epssStatus, 'unavailable')
      const m = db.affecting('lodash', '4.17.20')
      t.equal(m.length, 2, 'advisories still there')
      t.same(m.map((x) => x.epss), [undefined, undefined], 'without EPSS values')
    }
  })

  t.test('a GET that fails before any response is retried once', async (t) => {
    const logger = new RecordingLogger()
    const out = await compileEcosystem({ ecosystem: 'js', osvExportBaseUrl: `${s.peer.base}/osv`, epssFeedUrl: `${s.peer.base}/epss-flaky/feed.csv.gz`, tmpDir: s.tmp, clock, logger })
    t.same(logger.find(EPSS_FEED_UNAVAILABLE), [], 'no EPSS warning')
    t.equal(out.summary.epssStatus, 'available')
    // At least the dropped request and its retry (a loaded machine can add a refetch of a cut body).
    t.ok(s.peer.requests.filter((u) => u.startsWith('/epss-flaky/')).length >= 2)
    const cut = await compileEcosystem({ ecosystem: 'js', osvExportBaseUrl: `${s.peer.base}/osv`, epssFeedUrl: `${s.peer.base}/epss-cut/feed.csv.gz`, tmpDir: s.tmp, clock, logger })
    t.equal(cut.summary.epssStatus, 'available', 'a body cut mid-stream is fetched again')
    t.ok(s.peer.requests.filter((u) => u.startsWith('/epss-cut/')).length >= 2)
    t.same(logger.find(EPSS_FEED_UNAVAILABLE), [])
  })

  t.test('an OSV failure fails the compile and leaves nothing behind', async (t) => {
    const logger = new RecordingLogger()
    const base = { ecosystem: 'js' as const, epssFeedUrl: undefined, tmpDir: s.tmp, clock, logger }
    const failure = async (url: string): Promise<unknown> => {
      try { await compileEcosystem({ ...base, osvExportBaseUrl: url }) } catch (err) { return err }
      return undefined
    }
    t.ok(isServiceError(await failure(`${s.peer.base}/missing`), 'UPSTREAM_UNAVAILABLE'), '404 from the export')
    t.ok(isServiceError(await failure(`${s.peer.base}/broken`), 'UPSTREAM_DECODE'), 'not a zip')
    t.ok(isServiceError(await failure('http://127.0.0.1:1/osv'), 'UPSTREAM_UNAVAILABLE'), 'connection refused')
    t.same(await readdir(s.tmp), [])
  })
})
