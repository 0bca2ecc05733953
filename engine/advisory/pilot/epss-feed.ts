/**
 * The EPSS daily feed (FIRST CSV): optionally gzip-compressed; an optional
 * first line `#model_version:<model>,score_date:<timestamp>`; a header line
 * naming at least the `cve` and `epss` columns (`cve,epss,percentile`, or
 * `cve,epss` in the 2021 files); then one row per CVE. Read as a stream, line
 * by line, keeping only the CVEs asked for, so memory stays bounded by the
 * advisories' CVEs, not by the feed's 300k rows.
 */
import { Readable } from 'node:stream'
import { StringDecoder } from 'node:string_decoder'
import { createGunzip } from 'node:zlib'
import type { Dispatcher } from 'undici'
import { ServiceError } from '../../errors.js'
import { getSource } from './source-request.js'

export interface EpssFeed {
  /** EPSS probability (0..1) by CVE id, for the CVEs asked for (all when none were named). */
  readonly scores: Map<string, number>
  /** `score_date` of the comment line; undefined when the feed has none or it does not parse. */
  readonly scoreDate: Date | undefined
  readonly modelVersion: string | undefined
  /** Data rows read (all of them, not only the kept ones). */
  readonly rows: number
}

const CVE_ID = /^CVE-\d{4}-\d{4,}$/

function decodeFailure(reason: string): ServiceError {
  return new ServiceError('UPSTREAM_DECODE', { message: `the EPSS feed is malformed: ${reason}`, data: { reason } })
}

/** Text chunks of a body that may be gzip-compressed (detected by its magic bytes). */
async function* textChunks(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const it = body[Symbol.asyncIterator]()
  const first = await it.next()
  if (first.done === true) return
  const head = first.value
  const rest = (async function* () {
    yield head
    for (;;) {
      const n = await it.next()
      if (n.done === true) return
      yield n.value
    }
  })()
  let source: AsyncIterable<Uint8Array> = rest
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) {
    const gunzip = createGunzip()
    const input = Readable.from(rest)
    input.on('error', (err) => gunzip.destroy(err))
    source = input.pipe(gunzip)
  }
  const decoder = new StringDecoder('utf8')
  for await (const chunk of source) yield decoder.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength))
  const tail = decoder.end()
  if (tail !== '') yield tail
}

async function* lines(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  let carry = ''
  for await (const text of textChunks(body)) {
    carry += text
    let start = 0
    for (;;) {
      const nl = carry.indexOf('\n', start)
      if (nl === -1) break
      yield carry.slice(start, nl).replace(/\r$/, '')
      start = nl + 1
    }
    carry = carry.slice(start)
  }
  if (carry !== '') yield carry.replace(/\r$/, '')
}

/** Parses a feed body. Throws UPSTREAM_DECODE when it is not an EPSS CSV. */
export async function readEpssFeed(body: AsyncIterable<Uint8Array>, wanted?: ReadonlySet<string>): Promise<EpssFeed> {
  const scores = new Map<string, number>()
  let scoreDate: Date | undefined
  let modelVersion: string | undefined
  let cveColumn = -1
  let epssColumn = -1
  let rows = 0
  let lineNo = 0
  for await (const line of lines(body)) {
    lineNo++
    if (cveColumn === -1) {
      if (lineNo === 1 && line.startsWith('#')) {
        for (const part of line.slice(1).split(',')) {
          const colon = part.indexOf(':')
          if (colon === -1) continue
          const key = part.slice(0, colon).trim()
          const value = part.slice(colon + 1).trim()
          if (key === 'model_version') modelVersion = value
          if (key === 'score_date') {
            const t = Date.parse(value)
            if (Number.isFinite(t)) scoreDate = new Date(t)
          }
        }
        continue
      }
      const columns = line.split(',').map((c) => c.trim().toLowerCase())
      cveColumn = columns.indexOf('cve')
      epssColumn = columns.indexOf('epss')
      if (cveColumn === -1 || epssColumn === -1) throw decodeFailure('no cve,epss header line')
      continue
    }
    if (line.trim() === '') continue
    const fields = line.split(',')
    const cve = fields[cveColumn]?.trim()
    const score = Number(fields[epssColumn])
    if (cve === undefined || !CVE_ID.test(cve) || !Number.isFinite(score) || score < 0 || score > 1) {
      throw decodeFailure(`malformed row at line ${lineNo}`)
    }
    rows++
    if (wanted === undefined || wanted.has(cve)) scores.set(cve, score)
  }
  if (cveColumn === -1) throw decodeFailure('empty feed')
  if (rows === 0) throw decodeFailure('no rows')
  return { scores, scoreDate, modelVersion, rows }
}

/**
 * Fetches and parses the feed with a plain undici GET (source-request.ts; no
 * redirects are followed); a body that fails mid-stream is fetched once more.
 * Throws a ServiceError: UPSTREAM_UNAVAILABLE for a transport failure or a
 * non-2xx answer, UPSTREAM_DECODE for a malformed feed.
 */
export async function fetchEpssFeed(
  url: string | URL, options: { dispatcher?: Dispatcher; wanted?: ReadonlySet<string> } = {},
): Promise<EpssFeed> {
  try {
    return await fetchOnce(url, options)
  } catch (err) {
    // A connection lost mid-body (e.g. "other side closed") is worth one more GET; a bad answer is not.
    if (err instanceof ServiceError && err.data?.transport === true) return await fetchOnce(url, options)
    throw err
  }
}

async function fetchOnce(url: string | URL, options: { dispatcher?: Dispatcher; wanted?: ReadonlySet<string> }): Promise<EpssFeed> {
  let res: Dispatcher.ResponseData
  try {
    res = await getSource(new URL(typeof url === 'string' ? url : url.href), options.dispatcher)
  } catch (err) {
    throw new ServiceError('UPSTREAM_UNAVAILABLE', { message: 'the EPSS feed could not be fetched', cause: err })
  }
  if (res.statusCode < 200 || res.statusCode > 299) {
    await res.body.dump()
    throw new ServiceError('UPSTREAM_UNAVAILABLE', { message: `the EPSS feed answered ${res.statusCode}`, data: { status: res.statusCode } })
  }
  try {
    return await readEpssFeed(res.body, options.wanted)
  } catch (err) {
    res.body.destroy()
    if (err instanceof ServiceError) throw err
    // Not a parse failure of ours: the body stream itself failed (transport or gzip).
    throw new ServiceError('UPSTREAM_UNAVAILABLE', { message: 'the EPSS feed could not be read', cause: err, data: { transport: true } })
  }
}
