/**
 * The fixture upload index (test/peers/py-upload-index.ts) is a real
 * legacy upload API as twine speaks it: Debian's `twine upload` (twine 4,
 * from test/setup) uploads a real wheel and sdist to it with an API token,
 * the index lists them on its PEP 503 page with their sha256 and serves the
 * same bytes, a repeated upload is refused 409 `File already exists` and
 * twine's `--skip-existing` takes that as the file being there, and a wrong
 * token is refused. The fields twine sent are the reference the mirror
 * worker's form is checked against (test/mirror/py-mirror.test.ts).
 */
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { request } from 'undici'
import { cleanEnv, runCli } from '../clients/run-cli.js'
import { startUploadIndex } from '../peers/py-upload-index.js'
import { startFixtureIndex } from './fixture-index.js'

/** Debian's twine: the script, else the module under Debian's python3 (test/setup installs it). */
function twineCommand(): [string, string[]] {
  return existsSync('/usr/bin/twine') ? ['/usr/bin/twine', []] : ['/usr/bin/python3', ['-m', 'twine']]
}

const TOKEN = 'pypi-fixture-token'

t.test('twine upload to the fixture index', async (t) => {
  const built = await startFixtureIndex(t, { mode: 'html', projects: [{ name: 'Up_Loaded', releases: [{ version: '1.2.0', files: ['wheel', 'sdist'], requiresDist: ['six>=1'], requiresPython: '>=3.7' }] }] })
  const index = await startUploadIndex(t, { token: TOKEN })
  const dir = await mkdtemp(join(tmpdir(), 'twine-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const paths: string[] = []
  for (const dist of built.dists) {
    const path = join(dir, dist.filename)
    await writeFile(path, dist.bytes)
    paths.push(path)
  }
  const [command, prefix] = twineCommand()
  const twine = (args: string[], token = TOKEN) => runCli(command, [...prefix, 'upload', '--non-interactive', '--disable-progress-bar',
    '--repository-url', index.url, '-u', '__token__', '-p', token, ...args], { cwd: dir, env: cleanEnv({ HOME: dir }), timeoutMs: 60_000 })

  const first = await twine(paths)
  t.equal(first.exitCode, 0, `twine uploaded both files\n${first.stdout}\n${first.stderr}`)
  for (const dist of built.dists) {
    const held = index.files.get(dist.filename)
    t.equal(held?.sha256, dist.sha256, `${dist.filename}: the same bytes`)
    const fields = new Map(held?.fields ?? [])
    t.equal(fields.get(':action'), 'file_upload')
    t.equal(fields.get('protocol_version'), '1')
    t.equal(fields.get('name'), 'Up-Loaded', 'the METADATA name made safe (runs of other characters than letters, digits and dots to -)')
    t.equal(fields.get('version'), '1.2.0')
    t.equal(fields.get('sha256_digest'), dist.sha256)
    t.match(fields.get('md5_digest'), /^[0-9a-f]{32}$/)
    t.equal(fields.get('metadata_version'), '2.1', 'from the METADATA / PKG-INFO')
    t.equal(fields.get('requires_python'), '>=3.7')
    t.same(held?.fields.filter(([n]) => n === 'requires_dist').map(([, v]) => v), ['six>=1'])
    if (dist.kind === 'wheel') {
      t.equal(fields.get('filetype'), 'bdist_wheel')
      t.equal(fields.get('pyversion'), 'py3', 'the wheel\'s Python tag')
    } else {
      t.equal(fields.get('filetype'), 'sdist')
      // warehouse's legacy API documents `source`, which the mirror worker sends; pypiserver and this fixture take either.
      t.equal(fields.get('pyversion'), '', 'twine 4 sends an empty pyversion for an sdist')
    }
  }

  const page = await request(`${index.simpleUrl}up-loaded/`)
  const html = await page.body.text()
  t.equal(page.statusCode, 200)
  for (const dist of built.dists) t.match(html, `${dist.filename}#sha256=${dist.sha256}`, 'the PEP 503 page states the sha256')
  const wheel = built.dists.find((d) => d.kind === 'wheel')
  const served = await request(`${index.url}packages/${wheel?.filename ?? ''}`)
  t.same(Buffer.from(await served.body.arrayBuffer()), wheel?.bytes, 'and serves the bytes')

  const again = await twine([paths[0] ?? ''])
  t.not(again.exitCode, 0, 'a repeated upload fails')
  t.match(`${again.stdout}${again.stderr}`, /409|File already exists/)
  t.equal(index.attempts.at(-1)?.status, 409)
  const skipped = await twine(['--skip-existing', paths[0] ?? ''])
  t.equal(skipped.exitCode, 0, `--skip-existing reads the 409 as "already there"\n${skipped.stdout}\n${skipped.stderr}`)

  const refused = await twine([paths[0] ?? ''], 'wrong-token')
  t.not(refused.exitCode, 0)
  t.equal(index.attempts.at(-1)?.status, 403, 'a wrong token is refused')
  t.equal(index.incomplete, 0)
})
