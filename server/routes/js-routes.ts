/**
 * Which route of the `/js` mount a request names (SPEC.md 4.1). Pure, so the
 * table is tested on its own. Anything it does not recognise is deny by
 * default (404). Package and file names are only split out here; their
 * validity is checked by the handlers with engine/npm/names.ts before any
 * upstream request.
 *
 * A scoped package is written `@scope%2Fname` (SPEC.md 4); clients also send
 * `@scope/name` as two segments, and both are accepted. `package` is returned
 * in the single-segment form either way.
 */
export const JS_PREFIX = '/js'

export type JsRoute =
  | { readonly kind: 'ping' }
  | { readonly kind: 'unsupported'; readonly what: 'search' | 'dist-tags' }
  | { readonly kind: 'packument'; readonly package: string }
  | { readonly kind: 'publish'; readonly package: string }
  /** npm unpublish's writes (`/-rev/{rev}` on the package or its tarball): made at the publication target (501). */
  | { readonly kind: 'metadata_change'; readonly package: string }
  | { readonly kind: 'artifact'; readonly package: string; readonly filename: string }
  /** `GET /js/-/why/{package}/{version}`: the admission decision for one public version (issue 17 item 5). */
  | { readonly kind: 'why'; readonly package: string; readonly version: string }
  /** `POST /js/-/npm/v1/security/advisories/bulk`: npm audit, from the advisory database (issue 17 item 3). */
  | { readonly kind: 'audit_bulk' }
  /** `POST /js/-/npm/v1/security/audits` and `.../audits/quick`: npm 6's audit, answered 501. */
  | { readonly kind: 'audit_legacy' }
  /** `GET /js/-/npm/v1/keys`: the public upstream's signing keys (issue 17 item 4). */
  | { readonly kind: 'signing_keys' }
  /** `GET /js/-/npm/v1/attestations/{package}@{version}`: an admitted public version's attestations. */
  | { readonly kind: 'attestations'; readonly package: string; readonly version: string }
  | { readonly kind: 'not_found' }

const NOT_FOUND: JsRoute = Object.freeze({ kind: 'not_found' })

export function matchJsRoute(method: string, rawPath: string): JsRoute {
  // HEAD is GET without the body (RFC 9110 section 9.3.2): the same route, the
  // same status and headers; the Exchange sends no body for it.
  const read = method === 'GET' || method === 'HEAD'
  if (rawPath !== JS_PREFIX && !rawPath.startsWith(`${JS_PREFIX}/`)) return NOT_FOUND
  const segments = rawPath.slice(JS_PREFIX.length + 1).split('/')
  if (segments.length === 0 || segments[0] === '') return NOT_FOUND

  if (segments[0] === '-') return matchSpecial(method, read, segments.slice(1))

  const split = splitPackage(segments)
  if (split === undefined) return NOT_FOUND
  const [pkg, rest] = split
  if (rest.length === 0) {
    if (read) return { kind: 'packument', package: pkg }
    if (method === 'PUT') return { kind: 'publish', package: pkg }
    return NOT_FOUND
  }
  if (rest.length === 2 && rest[0] === '-' && read) {
    return { kind: 'artifact', package: pkg, filename: rest[1] as string }
  }
  // libnpmpublish unpublish: DELETE {pkg}/-rev/{rev} (all versions), PUT {pkg}/-rev/{rev} (one version's
  // packument rewrite), then DELETE {tarball}/-rev/{rev}.
  const revision = rest.length === 2 && rest[0] === '-rev' && rest[1] !== ''
  if (revision && (method === 'PUT' || method === 'DELETE')) return { kind: 'metadata_change', package: pkg }
  if (rest.length === 4 && rest[0] === '-' && rest[2] === '-rev' && rest[3] !== '' && method === 'DELETE') {
    return { kind: 'metadata_change', package: pkg }
  }
  return NOT_FOUND
}

function matchSpecial(method: string, read: boolean, rest: readonly string[]): JsRoute {
  if (rest.length === 1 && rest[0] === 'ping') return read ? { kind: 'ping' } : NOT_FOUND
  if (rest.length === 2 && rest[0] === 'v1' && rest[1] === 'search') {
    return read ? { kind: 'unsupported', what: 'search' } : NOT_FOUND
  }
  if (rest[0] === 'why' && read) {
    const split = splitPackage(rest.slice(1))
    if (split === undefined) return NOT_FOUND
    const [pkg, tail] = split
    return tail.length === 1 && tail[0] !== '' ? { kind: 'why', package: pkg, version: tail[0] as string } : NOT_FOUND
  }
  if (rest[0] === 'npm' && rest[1] === 'v1') return matchNpmV1(method, read, rest.slice(2))
  if (rest[0] === 'package') {
    const split = splitPackage(rest.slice(1))
    if (split === undefined) return NOT_FOUND
    const [, tail] = split
    if (tail.length === 1 && tail[0] === 'dist-tags' && read) return { kind: 'unsupported', what: 'dist-tags' }
    if (tail.length === 2 && tail[0] === 'dist-tags' && tail[1] !== '' && (method === 'PUT' || method === 'DELETE')) {
      return { kind: 'unsupported', what: 'dist-tags' }
    }
  }
  return NOT_FOUND
}

/** `/-/npm/v1/...`: audit, signing keys, attestations. */
function matchNpmV1(method: string, read: boolean, rest: readonly string[]): JsRoute {
  const path = rest.join('/')
  if (path === 'security/advisories/bulk') return method === 'POST' ? { kind: 'audit_bulk' } : NOT_FOUND
  if (path === 'security/audits' || path === 'security/audits/quick') return method === 'POST' ? { kind: 'audit_legacy' } : NOT_FOUND
  if (path === 'keys') return read ? { kind: 'signing_keys' } : NOT_FOUND
  if (rest[0] === 'attestations' && read) return matchAttestationSpec(rest.slice(1))
  return NOT_FOUND
}

/**
 * `{package}@{version}` after `attestations/`: `name@1.0.0`,
 * `@scope%2fname@1.0.0`, or `@scope/name@1.0.0` as two segments.
 */
export function matchAttestationSpec(segments: readonly string[]): JsRoute {
  if (segments.length < 1 || segments.length > 2) return NOT_FOUND
  const last = segments[segments.length - 1] as string
  const at = last.lastIndexOf('@')
  if (at <= 0 || at === last.length - 1) return NOT_FOUND
  const split = splitPackage([...segments.slice(0, -1), last.slice(0, at)])
  if (split === undefined || split[1].length !== 0) return NOT_FOUND
  return { kind: 'attestations', package: split[0], version: last.slice(at + 1) }
}

/** [package in single-segment form, remaining segments], or undefined. */
function splitPackage(segments: readonly string[]): [string, readonly string[]] | undefined {
  const first = segments[0]
  if (first === undefined || first === '') return undefined
  if (first.startsWith('@') && !/%2f/i.test(first)) {
    const name = segments[1]
    if (name === undefined || name === '' || name === '-') return undefined
    return [`${first}%2f${name}`, segments.slice(2)]
  }
  return [first, segments.slice(1)]
}
