/**
 * npm package names and artifact file names as they arrive in a route's path
 * (SPEC.md 4.1: `{package}` is URL-encoded, a scoped name is written
 * `@<scope>%2F<name>`; `{filename}` ends in `.tgz`).
 *
 * Decision on the npm naming rules: the proxy READS names that already exist
 * upstream, so it accepts what npm calls "valid for old packages" and refuses
 * only what can never name a package. Uppercase letters and the characters
 * `~ ' ! ( ) *` are accepted (old packages such as `JSONStream` still exist
 * and must be reachable); names of core modules are accepted. Refused: an
 * empty name or scope, a name over 214 characters, a leading `.` or `_` (on
 * the whole name and, to rule out traversal, on each scoped part), any `..`,
 * whitespace, NUL or other control characters, any character that
 * encodeURIComponent would escape, `node_modules` and `favicon.ico`, and in
 * the path segment any `%` escape other than the one scope slash (and an
 * optional `%40` for the leading `@`).
 */
import { ServiceError } from '../errors.js'

/** npm's own limit on a name's length, scope included. */
export const MAX_PACKAGE_NAME_LENGTH = 214

/** A generous bound on an artifact file name: a name, a version and `.tgz`. */
export const MAX_ARTIFACT_FILENAME_LENGTH = 512

const RESERVED_NAMES: ReadonlySet<string> = new Set(['node_modules', 'favicon.ico'])

/** Exactly the characters encodeURIComponent leaves as they are. */
const NAME_PART = /^[A-Za-z0-9\-_.!~*'()]+$/

/** `@scope%2Fname`, `@scope%2fname`, or the same with `%40` for the `@`. */
const SCOPED_SEGMENT = /^(?:@|%40)([^%/]*)%2[fF]([^%/]*)$/

function refuseName(reason: string): never {
  throw new ServiceError('BAD_PACKAGE_NAME', { data: { reason } })
}

function checkPart(part: string, where: 'name' | 'scope'): void {
  if (part.length === 0) refuseName(`empty ${where}`)
  if (!NAME_PART.test(part)) refuseName(`${where} has a character outside the URL-safe set`)
  if (part.startsWith('.') || part.startsWith('_')) refuseName(`${where} starts with . or _`)
  if (part.includes('..')) refuseName(`${where} contains ..`)
}

/** Checks a decoded name (`left-pad`, `@scope/name`); throws BAD_PACKAGE_NAME. */
export function checkPackageName(name: string): void {
  if (name.length === 0) refuseName('empty name')
  if (name.length > MAX_PACKAGE_NAME_LENGTH) refuseName('longer than 214 characters')
  if (name.startsWith('@')) {
    const slash = name.indexOf('/')
    if (slash < 0) refuseName('a scope without a name')
    checkPart(name.slice(1, slash), 'scope')
    checkPart(name.slice(slash + 1), 'name')
    return
  }
  checkPart(name, 'name')
  if (RESERVED_NAMES.has(name.toLowerCase())) refuseName('a reserved name')
}

/**
 * Decodes and checks the `{package}` path segment of a route. Returns the
 * decoded name (`@scope/name` for a scoped one) or throws BAD_PACKAGE_NAME.
 */
export function validatePackageName(raw: string): string {
  // A valid name is made of URL-safe characters only, so a valid segment has
  // no escape at all, except the scope slash (and perhaps the `@`).
  if (raw.length > MAX_PACKAGE_NAME_LENGTH * 3) refuseName('longer than 214 characters')
  const scoped = SCOPED_SEGMENT.exec(raw)
  let name: string
  if (scoped !== null) {
    name = `@${scoped[1] ?? ''}/${scoped[2] ?? ''}`
  } else {
    if (raw.includes('%')) refuseName('an escape other than the scope slash')
    if (raw.includes('/')) refuseName('a / in an unscoped name')
    if (raw.startsWith('@')) refuseName('a scope without an encoded slash')
    name = raw
  }
  checkPackageName(name)
  return name
}

/**
 * The name as an upstream path segment: `@scope%2fname` for a scoped name
 * (the form npm clients send), the name itself otherwise.
 */
export function encodePackageName(name: string): string {
  checkPackageName(name)
  if (!name.startsWith('@')) return encodeURIComponent(name)
  const slash = name.indexOf('/')
  return `@${encodeURIComponent(name.slice(1, slash))}%2f${encodeURIComponent(name.slice(slash + 1))}`
}

function refuseArtifact(reason: string): never {
  throw new ServiceError('BAD_ARTIFACT_NAME', { data: { reason } })
}

/** Escapes that decode to a path separator, a dot, NUL or a control character. */
const DANGEROUS_ESCAPE = /%(?:2[eEfF]|5[cC]|[01][0-9a-fA-F]|7[fF])/

/**
 * Decodes and checks the `{filename}` path segment of the artifact route.
 * Returns the decoded file name or throws BAD_ARTIFACT_NAME. A version may
 * carry `+` (build metadata), which some clients escape as `%2B`: such
 * harmless escapes are decoded.
 */
export function validateArtifactFilename(raw: string): string {
  if (raw.length === 0) refuseArtifact('empty')
  if (raw.length > MAX_ARTIFACT_FILENAME_LENGTH) refuseArtifact('too long')
  if (DANGEROUS_ESCAPE.test(raw)) refuseArtifact('an escaped separator, dot or control character')
  let name: string
  try {
    name = decodeURIComponent(raw)
  } catch {
    refuseArtifact('a malformed escape')
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) refuseArtifact('a control character')
  if (name.includes('/') || name.includes('\\')) refuseArtifact('a path separator')
  if (name.includes('..')) refuseArtifact('..')
  if (name.startsWith('.')) refuseArtifact('a leading .')
  if (!name.endsWith('.tgz') || name.length === '.tgz'.length) refuseArtifact('not a .tgz file name')
  return name
}

/**
 * The version a conventional npm tarball file name carries:
 * `{unscoped name}-{version}.tgz`, as registries and the mirror write it;
 * undefined for a file name of another form (nothing can be read from it).
 */
export function tarballFileVersion(name: string, file: string): string | undefined {
  const unscoped = name.startsWith('@') ? name.slice(name.indexOf('/') + 1) : name
  if (!file.startsWith(`${unscoped}-`) || !file.endsWith('.tgz')) return undefined
  const version = file.slice(unscoped.length + 1, -'.tgz'.length)
  return version === '' ? undefined : version
}
