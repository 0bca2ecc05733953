/**
 * Provenance of advisory data without credentials (SPEC.md 2.9, 5.6): the
 * source as `host:port`, and the source URL with userinfo, query and fragment
 * removed. These are what the artifact, the store metadata and the logs hold.
 */

const DEFAULT_PORTS: Readonly<Record<string, string>> = { 'http:': '80', 'https:': '443' }

/** `host:port` of a URL, with the scheme's default port written out. */
export function sourceHostPort(url: URL): string {
  const port = url.port === '' ? (DEFAULT_PORTS[url.protocol] ?? '') : url.port
  return port === '' ? url.hostname : `${url.hostname}:${port}`
}

/** The URL with userinfo, query and fragment removed. */
export function credentialFreeUrl(url: URL): string {
  const clean = new URL(url.href)
  clean.username = ''
  clean.password = ''
  clean.search = ''
  clean.hash = ''
  return clean.href
}

/** `{base}/{Ecosystem}/all.zip` for the OSV export (EXPORT_LAYOUT.md), keeping the base's path. */
export function osvExportUrl(base: string | URL, osvEcosystem: string): URL {
  const url = new URL(typeof base === 'string' ? base : base.href)
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/${encodeURIComponent(osvEcosystem)}/all.zip`
  return url
}

/**
 * What to send for a source URL: the URL without userinfo, and the userinfo,
 * if any, as HTTP Basic credentials (undici drops userinfo silently). The
 * query stays: it is part of the address (e.g. a signed URL), just never
 * recorded.
 */
export function fetchTarget(url: URL): { url: URL; headers: Record<string, string> } {
  if (url.username === '' && url.password === '') return { url, headers: {} }
  const bare = new URL(url.href)
  bare.username = ''
  bare.password = ''
  const user = decodeURIComponent(url.username)
  const pass = decodeURIComponent(url.password)
  return { url: bare, headers: { authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` } }
}
