/**
 * Merge and gate of `py` project pages with the real fixture pages and the
 * mount's real rule evaluator (DenyIdentity with PEP 440 specifiers,
 * AllowIfOlderThan reading each file's upload-time).
 */
import t from 'tap'

import { createEvaluator } from '../../engine/policy/evaluator.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import { gateProject } from '../../engine/pypi/project-gate.js'
import { mergeProjects, type MergedProject } from '../../engine/pypi/project-merge.js'
import { readSimpleHtml } from '../../engine/pypi/simple-html-reader.js'
import { readSimpleJson } from '../../engine/pypi/simple-json-reader.js'
import type { SimpleFile, SimpleProject } from '../../engine/pypi/simple-model.js'
import { renderSimpleJson } from '../../engine/pypi/simple-render.js'
import { ManualClock } from '../doubles/manual-clock.js'
import { fixtureBytes } from './fixture-pages.js'

const DAY = 86_400_000
const NOW = Date.parse('2026-11-01T00:00:00Z')
const django = (): SimpleProject =>
  readSimpleHtml(fixtureBytes('pep503-html/dependabot-core/pypi_simple_response_django.html'), 'django', 'https://public.example/simple/django/').project
const argset = (): SimpleProject =>
  readSimpleJson(fixtureBytes('pep691-json/pypi-simple/argset-700.json'), 'argset', 'https://public.example/simple/argset/').project

function evaluator(rules: RuleConfig[]) {
  const e = createEvaluator(rules, { ecosystem: 'py', database: undefined, clock: new ManualClock(NOW), maxAgeSeconds: 6 * 86400 })
  return (facts: Parameters<typeof e.evaluate>[0]) => e.evaluate(facts, 'admission')
}

function file(filename: string, extra: Partial<SimpleFile> = {}): SimpleFile {
  return { filename, url: `https://files.example/${filename}`, hashes: { sha256: 'aa'.repeat(32) }, ...extra }
}

function timed(filename: string, ms: number): SimpleFile {
  return file(filename, { size: 100, uploadTime: new Date(ms).toISOString(), uploadMs: ms })
}

t.test('merge: a private page hides the public one by default', async (t) => {
  const privatePage: SimpleProject = { name: 'Django', apiVersion: '1.0', files: [file('Django-1.1.3.tar.gz'), file('Django-9.0-py3-none-any.whl')] }
  const hidden = mergeProjects(privatePage, django())
  t.equal(hidden?.project.files.length, 2)
  t.ok(hidden?.project.files.every((f) => f.origin === 'private'))
  t.equal(hidden?.hiddenPublicFiles, 469)
  t.same(hidden?.mismatches, [])

  const mixed = mergeProjects(privatePage, django(), { privateHidesPublic: false })
  t.equal(mixed?.project.files.length, 2 + 468)
  t.equal(mixed?.shadowedPublicFiles, 1)
  t.same(mixed?.mismatches, [{ filename: 'Django-1.1.3.tar.gz', algorithms: ['sha256'] }], 'private wins, digest mismatch reported')
  const winner = mixed?.project.files.find((f) => f.filename === 'Django-1.1.3.tar.gz')
  t.equal(winner?.origin, 'private')
  t.equal(winner?.url, 'https://files.example/Django-1.1.3.tar.gz')

  const sameDigest: SimpleProject = {
    ...privatePage,
    files: [file('django-1.1.3.TAR.GZ', { hashes: { sha256: '0e5034cf8046ba77c62e95a45d776d2c59998b26f181ceaf5cec516115e3f85a' } })],
  }
  const agreeing = mergeProjects(sameDigest, django(), { privateHidesPublic: false })
  t.same(agreeing?.mismatches, [], 'same digest: no mismatch')
  t.equal(agreeing?.shadowedPublicFiles, 1, 'names compared case-insensitively')

  const withLists = mergeProjects({ ...privatePage, versions: ['9.0'], projectStatus: { status: 'archived' } }, { ...django(), versions: ['1.1.3', '9.0'] }, { privateHidesPublic: false })
  t.same(withLists?.project.versions, ['9.0', '1.1.3'], 'PEP 700 lists united')
  t.same(withLists?.project.projectStatus, { status: 'archived' }, 'the private status wins')

  t.equal(mergeProjects(undefined, undefined), undefined)
  t.ok(mergeProjects(undefined, django())?.project.files.every((f) => f.origin === 'public'))
  t.ok(mergeProjects(privatePage, undefined)?.project.files.every((f) => f.origin === 'private'))
})

t.test('gate: quarantine per file on upload-time, unreadable names dropped', async (t) => {
  const page: SimpleProject = {
    ...argset(),
    files: [
      ...argset().files, // uploaded 2021
      timed('argset-0.1.0-py2-none-any.whl', NOW - DAY), // a new file added to an old release
      timed('argset-0.2.0-py3-none-any.whl', NOW - DAY),
      file('argset-0.3.0.tar.gz'), // no upload-time
      timed('argset-0.1.0.macosx-10.7-intel.tar.gz', NOW - 400 * DAY), // no readable version
    ],
  }
  const merged = mergeProjects(undefined, page) as { project: MergedProject }
  const gated = gateProject(merged.project, evaluator([{ rule: 'AllowIfOlderThan', seconds: 7 * 86400 }]))
  t.same(gated.project.files.map((f) => f.filename), ['argset-0.1.0-py3-none-any.whl', 'argset-0.1.0.tar.gz'])
  t.same(gated.withheld.map((w) => [w.file.filename, w.version, w.decision.verdict]), [
    ['argset-0.1.0-py2-none-any.whl', '0.1.0', 'deny'],
    ['argset-0.2.0-py3-none-any.whl', '0.2.0', 'deny'],
    ['argset-0.3.0.tar.gz', '0.3.0', 'deny'],
  ])
  t.equal(gated.refusedWithoutUploadTime, 1, 'the public file without upload-time is reported')
  t.same(gated.unreadableVersions.map((f) => f.filename), ['argset-0.1.0.macosx-10.7-intel.tar.gz'])
  t.same(gated.project.versions, ['0.1.0'])
  const rendered = JSON.parse(renderSimpleJson(gated.project, { baseUrl: 'http://127.0.0.1:1' })) as { meta: Record<string, string>; versions: string[] }
  t.equal(rendered.meta['api-version'], '1.4', 'every surviving file has size and upload-time')
})

t.test('gate: an HTML-only public upstream cannot pass a quarantine', async (t) => {
  const merged = mergeProjects(undefined, django()) as { project: MergedProject }
  const gated = gateProject(merged.project, evaluator([{ rule: 'AllowIfOlderThan', seconds: 0 }]))
  t.equal(gated.project.files.length, 0)
  t.equal(gated.refusedWithoutUploadTime, 469)
  t.same(gated.project.versions, [])
})

t.test('gate: DenyIdentity with PEP 440 specifiers; a file survives when its version does', async (t) => {
  const page: SimpleProject = {
    name: 'argset',
    apiVersion: '1.0',
    files: ['1.0', '1.1rc1', '1.1', '2.0'].flatMap((v) => [timed(`argset-${v}.tar.gz`, NOW - 30 * DAY), timed(`argset-${v}-py3-none-any.whl`, NOW - 30 * DAY)]),
  }
  const decide = evaluator([{ rule: 'DenyIdentity', package: 'ArgSet', versions: '>=1.1.dev0,<2' }, { rule: 'AllowIfOlderThan', seconds: 86400 }])
  const gated = gateProject((mergeProjects(undefined, page) as { project: MergedProject }).project, decide)
  t.same(gated.project.versions, ['1.0', '2.0'])
  t.same(gated.project.files.map((f) => f.filename), ['argset-1.0.tar.gz', 'argset-1.0-py3-none-any.whl', 'argset-2.0.tar.gz', 'argset-2.0-py3-none-any.whl'])
  t.same(gated.withheld.map((w) => w.decision.reason), ['identity', 'identity', 'identity', 'identity'])
})

t.test('gate: private files are trusted; a quarantined project offers nothing', async (t) => {
  const privatePage: SimpleProject = { name: 'internal-tool', apiVersion: '1.0', files: [file('internal_tool-1.0-py3-none-any.whl')], versions: ['0.9', '1.0'] }
  const merged = mergeProjects(privatePage, undefined) as { project: MergedProject }
  const gated = gateProject(merged.project, evaluator([]), privatePage.versions)
  t.same(gated.project.files.map((f) => f.filename), ['internal_tool-1.0-py3-none-any.whl'], 'kept with no rule at all')
  t.same(gated.project.versions, ['0.9', '1.0'], 'the private list is kept whole')

  const quarantined: SimpleProject = { ...argset(), projectStatus: { status: 'quarantined', reason: 'malware report' } }
  const q = gateProject((mergeProjects(undefined, quarantined) as { project: MergedProject }).project, evaluator([{ rule: 'AllowIfOlderThan', seconds: 0 }]))
  t.equal(q.projectQuarantined, true)
  t.same(q.project.files, [])
  t.same(q.project.projectStatus, { status: 'quarantined', reason: 'malware report' })
})
