/**
 * Every code of ERROR_TABLE (engine/errors.ts) has a row in docs/errors.md
 * ("Error codes") with its status and its default Retry-After, and every
 * code that page documents exists.
 */
import t from 'tap'
import { ERROR_TABLE } from '../../engine/errors.js'
import { codeSpans, readDoc, section, tableRows } from './markdown.js'

const PAGE = 'docs/errors.md'

interface DocumentedCode { readonly status: string, readonly retryAfter: string, readonly line: number }

function documentedCodes(markdown: string): Map<string, DocumentedCode> {
  const out = new Map<string, DocumentedCode>()
  for (const row of tableRows(section(markdown, 'Error codes'))) {
    const [code] = codeSpans(row.cells[0] ?? '')
    if (code === undefined) continue
    out.set(code, { status: row.cells[1] ?? '', retryAfter: row.cells[2] ?? '', line: row.line })
  }
  return out
}

const documented = documentedCodes(readDoc(PAGE))

t.test('every error code is documented with its status and Retry-After', async (t) => {
  for (const [code, spec] of Object.entries(ERROR_TABLE) as [string, { status: number, retryAfter?: number }][]) {
    const row = documented.get(code)
    if (row === undefined) {
      t.fail(`${code} is not documented in ${PAGE} "Error codes"`)
      continue
    }
    t.equal(row.status, String(spec.status), `${code} status (${PAGE}:${row.line})`)
    t.equal(row.retryAfter, spec.retryAfter === undefined ? '' : `${spec.retryAfter} s`, `${code} Retry-After (${PAGE}:${row.line})`)
  }
})

t.test('every code the page documents exists', async (t) => {
  t.ok(documented.size > 0, `${PAGE} documents ${documented.size} codes`)
  for (const [code, row] of documented) t.ok(code in ERROR_TABLE, `${code} (${PAGE}:${row.line}) is in ERROR_TABLE`)
})
