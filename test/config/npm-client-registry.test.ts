import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import t, { type Test } from 'tap'
import { npmClientRegistry, publicUpstreamUrls } from '../../engine/config/npm-client-registry.js'
import { defaultDocument } from '../../engine/config/resolve-config.js'

/** Puts a stand-in `npm` first on PATH for the test (the real client is never run by tests). */
async function fakeNpm(t: Test, script: string): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'fake-npm-'))
  const file = join(dir, 'npm')
  await writeFile(file, `#!/bin/sh\n${script}\n`)
  await chmod(file, 0o755)
  const path = process.env['PATH']
  process.env['PATH'] = `${dir}${delimiter}${path ?? ''}`
  t.teardown(async () => {
    process.env['PATH'] = path
    await rm(dir, { recursive: true, force: true })
  })
}

t.test('npm config get registry: trimmed; "undefined", nothing or a failure is no registry', async (t) => {
  await t.test('a registry', async (t) => {
    await fakeNpm(t, 'test "$1 $2 $3" = "config get registry" && echo "  https://registry.example/  "')
    t.equal(npmClientRegistry(), 'https://registry.example/')
  })
  await t.test('undefined', async (t) => {
    await fakeNpm(t, 'echo undefined')
    t.equal(npmClientRegistry(), undefined)
  })
  await t.test('empty', async (t) => {
    await fakeNpm(t, 'echo')
    t.equal(npmClientRegistry(), undefined)
  })
  await t.test('a failing client', async (t) => {
    await fakeNpm(t, 'echo https://registry.example/; exit 1')
    t.equal(npmClientRegistry(), undefined)
  })
})

t.test('only a js mount without a public URL asks the npm client', async (t) => {
  const asked: string[] = []
  const lookup = () => { asked.push('npm'); return 'https://registry.example/' }
  t.same(publicUpstreamUrls(defaultDocument({}), lookup), { js: { url: 'https://registry.example/', origin: 'npm-client' } }, 'the default js mount')
  t.same(publicUpstreamUrls(defaultDocument({ mounts: { js: { upstreams: { public: { url: 'https://public.example/' } } }, py: {} } }), lookup), {
    js: { url: 'https://public.example/', origin: 'configured' },
    py: { url: undefined, origin: 'configured' },
  })
  t.same(asked, ['npm'], 'asked once, for the mount that needed it')
  t.same(publicUpstreamUrls(defaultDocument({ mounts: { js: {} } }), () => undefined), { js: { url: undefined, origin: 'npm-client' } }, 'nothing found is left to the checks')
})
