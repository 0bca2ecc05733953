/**
 * PEP 691 content negotiation: the Accept headers real clients send, q-values,
 * wildcards, specificity, the format parameter and the 406 case.
 */
import t from 'tap'

import { negotiatePageFormat, VARY } from '../../engine/pypi/content-negotiation.js'

const JSON_V1 = 'application/vnd.pypi.simple.v1+json'
const HTML_V1 = 'application/vnd.pypi.simple.v1+html'
const TEXT = 'text/html; charset=utf-8'

t.test('Accept headers', async (t) => {
  const cases: [string | undefined, string | undefined][] = [
    // pip (PEP 691 aware) and uv send these.
    [`${JSON_V1}, ${HTML_V1}; q=0.1, text/html; q=0.01`, JSON_V1],
    [`${JSON_V1}, ${HTML_V1};q=0.2, text/html;q=0.01`, JSON_V1],
    // A client that knows only HTML.
    ['text/html', TEXT],
    [HTML_V1, HTML_V1],
    [undefined, TEXT],
    ['', TEXT],
    ['*/*', JSON_V1],
    ['text/*', TEXT],
    ['application/*', JSON_V1],
    [`application/*;q=0.5, ${HTML_V1};q=0.6`, HTML_V1],
    [`*/*;q=0.1, ${JSON_V1};q=0`, HTML_V1],
    [`${JSON_V1};q=0.5, text/html`, TEXT],
    [`${JSON_V1};q=0.5, ${HTML_V1};q=0.5`, JSON_V1],
    ['application/vnd.pypi.simple.latest+json', JSON_V1],
    ['application/vnd.pypi.simple.latest+html', HTML_V1],
    ['APPLICATION/VND.PYPI.SIMPLE.V1+JSON', JSON_V1],
    ['application/json', undefined],
    ['application/vnd.pypi.simple.v2+json', undefined],
    [`${JSON_V1};q=0`, undefined],
    [`${JSON_V1};q=2`, undefined],
    ['garbage', undefined],
  ]
  for (const [accept, expected] of cases) t.equal(negotiatePageFormat(accept)?.contentType, expected, `Accept: ${String(accept)}`)
  t.equal(negotiatePageFormat(JSON_V1)?.format, 'json')
  t.equal(negotiatePageFormat('text/html')?.format, 'html')
  t.equal(VARY, 'Accept')
})

t.test('format query parameter overrides Accept', async (t) => {
  t.equal(negotiatePageFormat('text/html', JSON_V1)?.contentType, JSON_V1)
  t.equal(negotiatePageFormat(JSON_V1, 'text/html')?.contentType, TEXT)
  t.equal(negotiatePageFormat(JSON_V1, 'application/vnd.pypi.simple.latest+html')?.contentType, HTML_V1)
  t.equal(negotiatePageFormat(JSON_V1, 'application/json'), undefined)
})
