/**
 * SPEC.md 2.11 and 5.8: secrets live in the dedicated secret settings, never
 * in URLs. A URL with userinfo, or with a query parameter that reads like a
 * credential, is refused at boot, since it would otherwise be echoed and
 * logged in clear.
 */
import { CONFIG_REFUSAL } from '../errors.js'

const CREDENTIAL_PARAM = /(token|secret|passw(or)?d|pwd|api[-_]?key|access[-_]?key|auth|credential|signature|^sig$|^key$)/i

export interface UrlRuleOptions {
  /** Public egress: https only, with certificate validation (SPEC.md 5.3). */
  readonly httpsOnly?: boolean
  /** An upstream base URL: package paths are appended to it, so a query or fragment cannot stay where it is. */
  readonly base?: boolean
  /** The shared cache backend: redis:// or rediss:// rather than http(s). */
  readonly redis?: boolean
}

export function urlProblem(raw: string, options: UrlRuleOptions = {}): string | undefined {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return CONFIG_REFUSAL.notUrl(redactUnparsedUrl(raw))
  }
  // The scheme of `user:pw@host` is `user:`: the value is echoed redacted, never its parts.
  if (options.redis === true) {
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') return CONFIG_REFUSAL.notRedisUrl(redactUnparsedUrl(raw))
  } else if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return CONFIG_REFUSAL.notHttpUrl(redactUnparsedUrl(raw))
  }
  if (url.username !== '' || url.password !== '') return CONFIG_REFUSAL.urlUserinfo
  for (const name of url.searchParams.keys()) {
    if (CREDENTIAL_PARAM.test(name)) return CONFIG_REFUSAL.urlCredentialQuery(name)
  }
  if (options.base === true && (url.search !== '' || url.hash !== '')) return CONFIG_REFUSAL.upstreamQueryOrFragment
  if (options.httpsOnly === true && url.protocol !== 'https:') return CONFIG_REFUSAL.urlNotHttps
  return undefined
}

/**
 * What a refusal may echo of a value that is not an http(s) URL: everything
 * before its last `@` (after a `scheme://`, which is kept) is replaced, and a
 * query or fragment after it is dropped, so a mistyped URL never prints the
 * credential it carries. The last `@`, not the first, and not one before the
 * first `/`: no parser can tell where such a userinfo ends, and a password
 * may hold `/`, `?`, `#` or `@`. A path that holds an `@` (an npm scope) is
 * hidden with it: a refusal that shows less is the price of never leaking.
 */
export function redactUnparsedUrl(raw: string): string {
  const at = raw.lastIndexOf('@')
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(raw)?.[0] ?? ''
  const head = at === -1 ? '' : `${scheme}<redacted>@`
  const rest = at === -1 ? raw : raw.slice(at + 1)
  const cut = rest.search(/[?#]/)
  return head + (cut === -1 ? rest : `${rest.slice(0, cut)}${rest[cut]}<redacted>`)
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
