/**
 * PEP 691 content negotiation for a project page, as a pure function.
 *
 * Offered: `application/vnd.pypi.simple.v1+json`,
 * `application/vnd.pypi.simple.v1+html` and `text/html` (the `latest`
 * aliases of PEP 691 read as v1). The Accept header is read per RFC 9110
 * 12.5.1: q-values (absent = 1, 0 = not acceptable), wildcards `*\/*` and
 * `type/*`, the most specific range deciding each type's q. Among the
 * highest q, the server's order above breaks ties (JSON first: it carries
 * PEP 700 data that HTML cannot). No Accept header, or an empty one: text/html, what
 * every pre-PEP 691 client expects. Nothing acceptable: undefined, which
 * the route answers with 406. A `format` query parameter, as PyPI honours
 * it, overrides the header when it names one of the offered types.
 * Every answer varies on Accept (`Vary: Accept`).
 */
import { SIMPLE_HTML_V1, SIMPLE_JSON_V1, TEXT_HTML } from './simple-model.js'

export type PageFormat = 'json' | 'html'

export interface Negotiated {
  readonly format: PageFormat
  /** The Content-Type to answer with. */
  readonly contentType: string
}

const OFFERS: readonly { readonly type: string; readonly format: PageFormat; readonly contentType: string }[] = [
  { type: SIMPLE_JSON_V1, format: 'json', contentType: SIMPLE_JSON_V1 },
  { type: SIMPLE_HTML_V1, format: 'html', contentType: SIMPLE_HTML_V1 },
  { type: TEXT_HTML, format: 'html', contentType: `${TEXT_HTML}; charset=utf-8` },
]

const ALIASES: Readonly<Record<string, string>> = {
  'application/vnd.pypi.simple.latest+json': SIMPLE_JSON_V1,
  'application/vnd.pypi.simple.latest+html': SIMPLE_HTML_V1,
}

export const VARY = 'Accept'

interface Range { readonly type: string; readonly subtype: string; readonly q: number }

const Q_VALUE = /^(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?)$/

function parseAccept(header: string): Range[] {
  const ranges: Range[] = []
  for (const part of header.split(',')) {
    const [media, ...params] = part.split(';')
    const m = /^\s*([a-z0-9!#$%&'*+.^_`|~-]+)\/([a-z0-9!#$%&'*+.^_`|~-]+)\s*$/i.exec(media ?? '')
    if (m === null) continue
    let q = 1
    for (const p of params) {
      const [k, v] = p.split('=').map((s) => s.trim())
      if (k?.toLowerCase() === 'q') q = v !== undefined && Q_VALUE.test(v) ? Number(v) : 0
    }
    let type = `${(m[1] as string).toLowerCase()}/${(m[2] as string).toLowerCase()}`
    type = ALIASES[type] ?? type
    const [t, s] = type.split('/') as [string, string]
    ranges.push({ type: t, subtype: s, q })
  }
  return ranges
}

/** The q of `offer` under `ranges`: the most specific matching range decides (RFC 9110 12.5.1). */
function qualityOf(offer: string, ranges: readonly Range[]): number {
  const [type, subtype] = offer.split('/') as [string, string]
  let best = -1
  let specificity = -1
  for (const r of ranges) {
    const s = r.type === type && r.subtype === subtype ? 2 : r.type === type && r.subtype === '*' ? 1 : r.type === '*' && r.subtype === '*' ? 0 : -1
    if (s > specificity) {
      specificity = s
      best = r.q
    }
  }
  return best < 0 ? 0 : best
}

/** The format to answer with, or undefined for 406 Not Acceptable. */
export function negotiatePageFormat(accept: string | undefined, formatQuery?: string): Negotiated | undefined {
  if (formatQuery !== undefined) {
    const wanted = ALIASES[formatQuery.toLowerCase()] ?? formatQuery.toLowerCase()
    const offer = OFFERS.find((o) => o.type === wanted)
    return offer === undefined ? undefined : { format: offer.format, contentType: offer.contentType }
  }
  if (accept === undefined || accept.trim() === '') return { format: 'html', contentType: `${TEXT_HTML}; charset=utf-8` }
  const ranges = parseAccept(accept)
  let chosen: (typeof OFFERS)[number] | undefined
  let chosenQ = 0
  for (const offer of OFFERS) {
    const q = qualityOf(offer.type, ranges)
    if (q > chosenQ) {
      chosen = offer
      chosenQ = q
    }
  }
  return chosen === undefined ? undefined : { format: chosen.format, contentType: chosen.contentType }
}
