/**
 * SPEC.md 2.11 and 5.8: secrets live in the dedicated secret settings, never
 * in URLs. A URL with userinfo, or with a query parameter that reads like a
 * credential, is refused at boot, since it would otherwise be echoed and
 * logged in clear.
 */
const CREDENTIAL_PARAM = /(token|secret|passw(or)?d|pwd|api[-_]?key|access[-_]?key|auth|credential|signature|^sig$|^key$)/i

export function urlProblem(raw: string, options: { httpsOnly?: boolean } = {}): string | undefined {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return `not a valid absolute URL: ${JSON.stringify(redactUnparsedUrl(raw))}`
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `must be an http or https URL, got ${url.protocol}`
  if (url.username !== '' || url.password !== '') return 'must not carry userinfo (a credential in the URL); use the secret setting instead'
  for (const name of url.searchParams.keys()) {
    if (CREDENTIAL_PARAM.test(name)) return `must not carry a credential in the query (parameter "${name}"); use the secret setting instead`
  }
  if (options.httpsOnly === true && url.protocol !== 'https:') return 'must be https: public egress is https only, with certificate validation'
  return undefined
}

/**
 * What a refusal may echo of a value that is not a URL at all: whatever
 * could be userinfo (everything between `//` and an `@` before the path) is
 * replaced, and query and fragment are dropped, so a mistyped URL never
 * prints the password it carries.
 */
export function redactUnparsedUrl(raw: string): string {
  const cut = raw.search(/[?#]/)
  const base = cut === -1 ? raw : `${raw.slice(0, cut)}${raw[cut]}<redacted>`
  return base.replace(/^([^/]*\/\/)[^/]*@/, '$1<redacted>@').replace(/^([^/:@]*:)?[^/:@]*:[^/@]*@/, '<redacted>@')
}

/** The URL with userinfo, query and fragment removed, for logs and provenance (SPEC.md 2.9). */
export function credentialFreeUrl(raw: string): string {
  try {
    const url = new URL(raw)
    url.username = ''
    url.password = ''
    url.search = ''
    url.hash = ''
    return url.toString()
  } catch {
    return '<invalid url>'
  }
}
