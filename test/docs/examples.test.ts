/**
 * The example configurations of the documentation load as written (the
 * README's and docs/configuration.md's "A complete example"), and the rule
 * lists they call the shipped rules are DEFAULT_RULES.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import YAML from 'yaml'
import { loadConfig } from '../../engine/config/load.js'
import { DEFAULT_RULES } from '../../engine/config/schema.js'
import { firstFence, lines, readDoc, section } from './markdown.js'

/** The secrets each example leaves to the environment, as its text names them. */
const ENV: Record<string, Record<string, string>> = {
  'README.md': {
    SERVICE_MOUNTS__JS__UPSTREAMS__PRIVATE__TOKEN: 'private-token-for-the-example',
  },
  'docs/configuration.md': {
    SERVICE_SERVER__EDGE_TOKENS: '["edge-token-for-the-example"]',
    SERVICE_MOUNTS__JS__UPSTREAMS__PRIVATE__TOKEN: 'private-token-for-the-example',
    SERVICE_MOUNTS__JS__MIRROR__TOKEN: 'mirror-token-for-the-example',
    SERVICE_MOUNTS__PY__MIRROR__TOKEN: 'py-mirror-token-for-the-example',
  },
}

async function load(yamlText: string, env: Record<string, string>) {
  const dir = await mkdtemp(join(tmpdir(), 'docs-example-'))
  try {
    const path = join(dir, 'config.yaml')
    await writeFile(path, yamlText)
    return loadConfig({ configPath: path, env, npmRegistry: () => undefined })
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

for (const page of ['README.md', 'docs/configuration.md']) {
  t.test(`${page}: "A complete example" loads`, async (t) => {
    const example = firstFence(section(readDoc(page), 'A complete example'), 'yaml')
    if (example === undefined) return t.fail(`${page} has no yaml block under "A complete example"`)
    const env = ENV[page] ?? {}
    for (const name of Object.keys(env)) t.ok(readDoc(page).includes(name), `${page} names ${name}`)
    const loaded = await load(example, env)
    t.same(loaded.ok ? [] : loaded.problems, [], 'no problems')
    if (!loaded.ok) return
    t.ok(loaded.config.mounts.js?.upstreams.private !== undefined, 'the js mount has a private upstream')
    t.ok(loaded.config.mounts.js?.upstreams.public !== undefined, 'the js mount has a public upstream')
    t.ok(loaded.config.mounts.py?.upstreams.private !== undefined && loaded.config.mounts.py.upstreams.public !== undefined, 'the py mount has both')
    if (page === 'README.md') {
      t.same(loaded.config.mounts.js?.rules, DEFAULT_RULES, 'the README spells out the shipped rules')
      t.same(loaded.config.mounts.py?.rules, DEFAULT_RULES, 'the py mount gets them by setting none')
      t.ok(loaded.config.advisories.osvExportBaseUrl !== undefined, 'the README example names the advisory source')
    }
  })
}

t.test('docs/configuration.md: the shipped rule list is DEFAULT_RULES', async (t) => {
  const all = lines(readDoc('docs/configuration.md'))
  const at = all.findIndex((l) => !l.fenced && l.text.startsWith('The shipped rule list'))
  t.ok(at >= 0, 'the page shows the shipped rule list')
  const block = firstFence(all.slice(at), 'yaml')
  t.same((YAML.parse(block ?? '') as { rules?: unknown }).rules, DEFAULT_RULES)
})
