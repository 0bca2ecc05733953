/**
 * Which package versions an identity denial names (SPEC.md 1.7): a package
 * name and an exact version or a range, read in the mount's ecosystem.
 *
 * - `js`: names compare exactly; `versions` is an exact version or a semver
 *   range. A range matches pre-releases inside it (`includePrerelease`): a
 *   denial of `<2.0.0` must also deny `1.9.9-rc.1`.
 * - `py`: names compare after PEP 503 normalisation (`Foo_Bar` is `foo-bar`);
 *   `versions` is an exact version or a PEP 440 specifier set, compared by
 *   PEP 440 (`1.0` is `1.0.0`).
 *
 * A candidate version that does not parse in its ecosystem matches only an
 * identical string, never a range.
 */
import semver from 'semver'

import type { Ecosystem } from '../advisory/database.js'
import { parsePep440Specifier } from './pep440-specifier.js'

export interface IdentityMatcher {
  matches(name: string, version: string): boolean
}

/** PEP 503 name normalisation. */
export function normalizePyName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-')
}

function jsVersionMatcher(versions: string): ((version: string) => boolean) | string {
  const exact = semver.valid(versions)
  if (exact !== null) {
    return (version) => version === versions || (semver.valid(version) !== null && semver.eq(version, exact))
  }
  const range = semver.validRange(versions)
  if (range === null) return `"${versions}" is neither a semver version nor a semver range`
  return (version) => semver.valid(version) !== null && semver.satisfies(version, range, { includePrerelease: true })
}

function pyVersionMatcher(versions: string): ((version: string) => boolean) | string {
  const specifier = parsePep440Specifier(versions)
  if (typeof specifier === 'string') return specifier
  return (version) => specifier.matches(version)
}

/** A matcher, or a sentence saying why `versions` is not valid for the ecosystem. */
export function identityMatcher(ecosystem: Ecosystem, packageName: string, versions: string): IdentityMatcher | string {
  if (ecosystem === 'js') {
    const matchVersion = jsVersionMatcher(versions)
    if (typeof matchVersion === 'string') return matchVersion
    return { matches: (name, version) => name === packageName && matchVersion(version) }
  }
  const matchVersion = pyVersionMatcher(versions)
  if (typeof matchVersion === 'string') return matchVersion
  const normalized = normalizePyName(packageName)
  return { matches: (name, version) => normalizePyName(name) === normalized && matchVersion(version) }
}
