/**
 * Just enough Markdown reading for the documentation tests: headings with
 * the anchors GitHub gives them, sections, pipe tables, fenced blocks and
 * inline links, all outside fenced code.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))

export function readDoc(relative: string): string {
  return readFileSync(join(ROOT, relative), 'utf8')
}

export interface Line {
  readonly text: string
  /** 1-based, for messages. */
  readonly number: number
  /** Inside a fenced code block (fence lines included). */
  readonly fenced: boolean
}

export function lines(markdown: string): Line[] {
  const out: Line[] = []
  let fence: string | undefined
  markdown.split('\n').forEach((text, index) => {
    const opener = /^\s{0,3}(`{3,}|~{3,})/.exec(text)
    if (fence === undefined && opener !== null) {
      fence = opener[1]
      out.push({ text, number: index + 1, fenced: true })
      return
    }
    if (fence !== undefined) {
      out.push({ text, number: index + 1, fenced: true })
      if (text.trim().startsWith(fence[0]!.repeat(fence.length))) fence = undefined
      return
    }
    out.push({ text, number: index + 1, fenced: false })
  })
  return out
}

export interface Heading {
  readonly level: number
  readonly text: string
  readonly slug: string
  readonly line: number
}

/** The text GitHub renders for heading source: link targets, code and emphasis markers dropped. */
function renderedText(source: string): string {
  return source
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/<[^>]+>/g, '')
    .trim()
}

/**
 * GitHub's heading anchor (github-slugger): lower case, every character that
 * is not a letter, mark, number, connector (`_`), space or hyphen removed,
 * each space a hyphen; a repeated slug gets `-1`, `-2`...
 */
export function githubSlug(text: string): string {
  return text.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-')
}

export function headings(markdown: string): Heading[] {
  const seen = new Map<string, number>()
  const out: Heading[] = []
  for (const line of lines(markdown)) {
    if (line.fenced) continue
    const match = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line.text)
    if (match === null) continue
    const text = renderedText(match[2]!)
    const base = githubSlug(text)
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    out.push({ level: match[1]!.length, text, slug: count === 0 ? base : `${base}-${count}`, line: line.number })
  }
  return out
}

/** The lines under the first heading whose text is `title`, up to the next heading of the same or a higher level. */
export function section(markdown: string, title: string): Line[] {
  const all = lines(markdown)
  const heads = headings(markdown)
  const head = heads.find((h) => h.text === title)
  if (head === undefined) return []
  const next = heads.find((h) => h.line > head.line && h.level <= head.level)
  return all.filter((l) => l.number > head.line && (next === undefined || l.number < next.line))
}

/** The cells of every pipe-table body row in `body` (header and delimiter rows left out); `\|` stays inside a cell. */
export function tableRows(body: readonly Line[]): { cells: string[], line: number }[] {
  const rows: { cells: string[], line: number }[] = []
  for (const line of body) {
    const text = line.text.trim()
    if (line.fenced || !text.startsWith('|')) continue
    const cells = text.replace(/^\|/, '').replace(/\|$/, '').split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, '|'))
    const isDelimiter = cells.every((c) => /^:?-{3,}:?$/.test(c))
    // The row right above a delimiter row is the header; the delimiter row is no row.
    if (isDelimiter) { rows.pop(); continue }
    rows.push({ cells, line: line.number })
  }
  return rows
}

/** Every inline code span of a cell, without its backticks. */
export function codeSpans(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)
}

/** The first fenced block of `language` in `body`, without its fence lines. */
export function firstFence(body: readonly Line[], language: string): string | undefined {
  const start = body.findIndex((l) => l.fenced && new RegExp(`^\\s{0,3}(\`{3,}|~{3,})${language}\\s*$`).test(l.text))
  if (start < 0) return undefined
  const out: string[] = []
  for (const line of body.slice(start + 1)) {
    if (!line.fenced || /^\s{0,3}(`{3,}|~{3,})\s*$/.test(line.text)) break
    out.push(line.text)
  }
  return out.join('\n')
}

export interface Link {
  readonly target: string
  readonly line: number
}

/**
 * Inline links and images outside fenced blocks and code spans; link text and
 * code spans may run over a line break, as Markdown allows.
 */
export function links(markdown: string): Link[] {
  // Blank out fences and code spans, keeping every offset, so line numbers stay true.
  const prose = lines(markdown).map((l) => (l.fenced ? ' '.repeat(l.text.length) : l.text)).join('\n')
    .replace(/`[^`]*`/g, (span) => span.replace(/[^\n]/g, ' '))
  const out: Link[] = []
  for (const match of prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const line = prose.slice(0, match.index).split('\n').length
    out.push({ target: match[1]!, line })
  }
  return out
}
