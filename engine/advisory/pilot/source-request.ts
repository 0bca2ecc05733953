/**
 * One GET of an advisory source (OSV export, EPSS feed) with a plain undici
 * request. Userinfo in the URL is sent as Basic credentials (source-url.ts).
 *
 * A GET that fails before any response arrives is retried once: a pooled
 * keep-alive connection can be closed by the server just as it is reused
 * (seen here between the OSV download and the EPSS fetch from one origin),
 * and a GET is safe to repeat. Nothing else is retried; the next scheduled
 * compile is the retry for everything else.
 */
import { request, type Dispatcher } from 'undici'
import { fetchTarget } from './source-url.js'

export async function getSource(url: URL, dispatcher?: Dispatcher): Promise<Dispatcher.ResponseData> {
  const target = fetchTarget(url)
  const options = { method: 'GET' as const, headers: target.headers, ...(dispatcher === undefined ? {} : { dispatcher }) }
  try {
    return await request(target.url, options)
  } catch {
    return await request(target.url, options)
  }
}
