/**
 * The file-name version parser against every file name in the real fixture
 * pages (../shared/data/pypi-simple), and the rules' edge cases.
 */
import t from 'tap'

import { fileNameVersion } from '../../engine/pypi/file-name-version.js'
import { readSimpleHtml } from '../../engine/pypi/simple-html-reader.js'
import { readSimpleJson } from '../../engine/pypi/simple-json-reader.js'
import { FIXTURE_PAGES, fixtureBytes } from './fixture-pages.js'

/**
 * Every file name of the fixture pages that yields no version, checked by
 * eye: devpi's navigation links and version list (the devpi page is a web
 * UI, not a Simple page), legacy bdist_dumb archives whose "version" carries
 * the platform, a non-PEP 440 version and two wheels whose name part was not
 * escaped (`-` must be `_` in a wheel name; pip cannot read them either).
 */
const UNREADABLE = new Set([
  'luigi: devpi', 'luigi: How to search?', 'luigi: Close help', 'luigi: trove classifiers', 'luigi: luigi', 'luigi: ok',
  ...['0.10.2', '0.10.1', '0.10.0', '0.9.0', '0.8.0', '0.7.2', '0.7.1', '0.7.0', '0.6.0', '0.5.1', '0.5.0', '0.4.0', '0.3.1', '0.3.0',
    '0.2.2', '0.2.1', '0.2.0', '0.1.0', '0.0.30', '0.0.29', '0.0.28', '0.0.27', '0.0.26.1', '0.0.25', '0.0.24', '0.0.23', '0.0.22',
    '0.0.21', '0.0.20', '0.0.19', '0.0.18', '0.0.17', '0.0.16', '0.0.15', '0.0.14', '0.0.13', '0.0.12', '0.0.11', '0.0.10', '0.0.9',
    '0.0.8', '0.0.7', '0.0.6', '0.0.5', '0.0.4', '0.0.3', '0.0.2', '0.0.1'].map((v) => `luigi: ${v}`),
  'luigi: luigi-1.0.9.macosx-10.7-intel.tar.gz', 'luigi: luigi-1.0.9.macosx-10.7-intel.zip',
  'poetry: poetry-21.07.28.5ffb65e2ff8067c732e2b178d03b707c7fb27855-py3-none-any.whl',
  'isort-metadata: isort-metadata-4.3.4-py3-none-any.whl',
  'sqlalchemy-legacy: sqlalchemy-legacy-4.3.4-py2-none-any.whl',
])

t.test('every file name in the fixture pages', async (t) => {
  let parsed = 0
  let unreadable = 0
  const kinds = { wheel: 0, sdist: 0 }
  for (const page of FIXTURE_PAGES) {
    const read = page.format === 'json' ? readSimpleJson : readSimpleHtml
    for (const file of read(fixtureBytes(page.path), page.project, page.pageUrl).project.files) {
      const key = `${page.project}: ${file.filename}`
      const v = fileNameVersion(file.filename, page.project)
      if (v === undefined) {
        unreadable++
        t.ok(UNREADABLE.has(key), `unreadable: ${key}`)
      } else {
        parsed++
        kinds[v.kind]++
        t.notOk(UNREADABLE.has(key), `readable: ${key}`)
        // The normal form re-parses to itself and the raw text is a substring of the name.
        t.equal(fileNameVersion(file.filename.replace(v.raw, v.version), page.project)?.version, v.version, key)
        t.ok(file.filename.includes(`-${v.raw}`), key)
      }
    }
  }
  t.comment(`fixture file names: ${parsed} parsed (${kinds.wheel} wheels, ${kinds.sdist} sdists), ${unreadable} unreadable`)
  t.equal(parsed, 982)
  t.equal(unreadable, 62)
})

t.test('wheel names (PEP 427/491)', async (t) => {
  const cases: [string, string, string | undefined, string?][] = [
    ['Django-4.2.1-py3-none-any.whl', 'django', '4.2.1'],
    ['zope.interface-5.4.0-cp39-cp39-manylinux_2_5_x86_64.manylinux1_x86_64.whl', 'zope-interface', '5.4.0'],
    ['pkg-1.0-1build-py3-none-any.whl', 'pkg', '1.0', '1build'],
    ['pkg-1.0-x1-py3-none-any.whl', 'pkg', undefined], // a build tag starts with a digit
    ['my_pkg-2.0rc1-py2.py3-none-any.whl', 'My.Pkg', '2.0rc1'],
    ['other-1.0-py3-none-any.whl', 'pkg', undefined], // another project's wheel
    ['pkg-1.0-py3-none.whl', 'pkg', undefined], // too few tags
    ['pkg-v1.0-py3-none-any.whl', 'pkg', undefined],
    ['pkg-1.0.post1.dev2+local.7-py3-none-any.whl', 'pkg', '1.0.post1.dev2+local.7'],
    ['PKG-01.02-py3-none-any.WHL', 'pkg', '1.2'],
  ]
  for (const [name, project, version, build] of cases) {
    const v = fileNameVersion(name, project)
    t.equal(v?.version, version, name)
    if (v !== undefined) t.equal(v.kind, 'wheel')
    if (build !== undefined) t.equal(v?.build, build)
  }
})

t.test('source distribution names (PEP 625 and legacy)', async (t) => {
  const cases: [string, string, string | undefined][] = [
    ['python-dateutil-2.8.2.tar.gz', 'python-dateutil', '2.8.2'],
    ['python_dateutil-2.9.0.tar.gz', 'python-dateutil', '2.9.0'],
    ['Django-1.1.3.tar.gz', 'Django', '1.1.3'],
    ['luigi-1.0.9.zip', 'luigi', '1.0.9'],
    ['foo-1.0-1.tar.bz2', 'foo', '1.0.post1'],
    ['foo-1.0.tgz', 'foo', '1.0'],
    ['foo-1.0.tar.xz', 'foo', '1.0'],
    ['foo-bar-1.0.tar.gz', 'foo', undefined], // foo-bar's file, not foo's
    ['foo-bar-1.0.tar.gz', 'foo-bar', '1.0'],
    ['foo-1.0.egg', 'foo', undefined],
    ['foo-1.0.win32.exe', 'foo', undefined],
    ['foo-.tar.gz', 'foo', undefined],
    ['foo.tar.gz', 'foo', undefined],
    ['foo-1.0 .tar.gz', 'foo', undefined],
  ]
  for (const [name, project, version] of cases) t.equal(fileNameVersion(name, project)?.version, version, name)
})
