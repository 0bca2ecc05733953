/**
 * Every relative link and `#anchor` of README.md, CONTRIBUTING.md and
 * docs/*.md resolves: the file (or folder) exists, and an anchor names a
 * heading of the linked Markdown file by the slug GitHub gives it.
 */
import { existsSync, readdirSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import t from 'tap'
import { githubSlug, headings, links, readDoc, ROOT } from './markdown.js'

const PAGES = ['README.md', 'CONTRIBUTING.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)]

const anchorsOf = new Map<string, Set<string>>()
function anchors(page: string): Set<string> {
  let found = anchorsOf.get(page)
  if (found === undefined) {
    found = new Set(headings(readDoc(page)).map((h) => h.slug))
    anchorsOf.set(page, found)
  }
  return found
}

t.test('the slug is GitHub\'s', async (t) => {
  t.equal(githubSlug('Mirroring py files'), 'mirroring-py-files')
  t.equal(githubSlug('Node.js runtimes'), 'nodejs-runtimes')
  t.equal(githubSlug('Why /readyz answers 503 on the embedded defaults'), 'why-readyz-answers-503-on-the-embedded-defaults')
  t.equal(githubSlug('The launcher, and how heap limits reach Node'), 'the-launcher-and-how-heap-limits-reach-node')
  t.equal(githubSlug('npm, pnpm and yarn: the /js mount'), 'npm-pnpm-and-yarn-the-js-mount')
  t.same(headings('# A\n## A\n```\n# not a heading\n```\n## B_c').map((h) => h.slug), ['a', 'a-1', 'b_c'])
})

t.test('the pages exist', async (t) => {
  for (const page of ['README.md', 'CONTRIBUTING.md', 'docs/configuration.md', 'docs/npm.md', 'docs/python.md', 'docs/security.md', 'docs/advisories.md', 'docs/mirror.md', 'docs/dredger.md', 'docs/memory.md', 'docs/observability.md', 'docs/deploy.md', 'docs/errors.md']) {
    t.ok(PAGES.includes(page), page)
  }
})

for (const page of PAGES) {
  t.test(`every relative link of ${page} resolves`, async (t) => {
    const found = links(readDoc(page))
    for (const link of found) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(link.target)) continue
      const hash = link.target.indexOf('#')
      const path = hash < 0 ? link.target : link.target.slice(0, hash)
      const anchor = hash < 0 ? undefined : decodeURIComponent(link.target.slice(hash + 1))
      const target = path === '' ? page : normalize(join(dirname(page), decodeURIComponent(path)))
      const where = `${page}:${link.line} -> ${link.target}`
      if (target.startsWith('..') || !existsSync(join(ROOT, target))) {
        t.fail(`${where}: ${relative('.', target)} does not exist`)
        continue
      }
      if (anchor === undefined) { t.pass(where); continue }
      if (!target.endsWith('.md')) { t.fail(`${where}: an anchor into a file that is not Markdown`); continue }
      t.ok(anchors(target).has(anchor), `${where}: #${anchor} is a heading of ${target}`)
    }
  })
}
