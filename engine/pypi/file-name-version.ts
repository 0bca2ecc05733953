/**
 * The version of a distribution file, read from its file name (the only
 * place a Simple API page states it per file).
 *
 * - Wheels (PEP 427, PEP 491; binary distribution format spec):
 *   `{name}-{version}(-{build})?-{python}-{abi}-{platform}.whl`. The name
 *   and version segments never contain `-` (writers escape it as `_`), so
 *   the name is split on `-` into 5 or 6 parts; a build tag starts with a digit.
 * - Source distributions: PEP 625 `{name}-{version}.tar.gz` with the name
 *   normalised with `_`, and the legacy forms `.zip`, `.tar.bz2`, `.tgz`,
 *   `.tar.xz`, `.tbz`, `.tar` whose name part is the project's name as
 *   written, possibly containing `-`. The split is pip's: the first `-`
 *   after which the prefix normalises (PEP 503) to the project's name.
 *
 * Both kinds must name the expected project (a file of another project on
 * the page is not this project's) and carry a PEP 440 version. Anything
 * else (eggs, `.exe`/`.msi` installers, a legacy non-PEP 440 version, a
 * page's navigation links) yields undefined: the caller drops the file and
 * counts it (issue 16: "a file whose version cannot be read is dropped and
 * counted").
 */
import { formatPep440, parsePep440, type Pep440Version } from '../advisory/artifact/pep440.js'
import { normalizeProjectName } from './project-name.js'

export type DistributionKind = 'wheel' | 'sdist'

export interface FileNameVersion {
  readonly kind: DistributionKind
  /** The version as written in the file name. */
  readonly raw: string
  /** Its PEP 440 normal form (what rules and the `versions` list use). */
  readonly version: string
  readonly parsed: Pep440Version
  /** Wheel build tag, when present. */
  readonly build?: string
}

const SDIST_SUFFIXES = ['.tar.gz', '.tar.bz2', '.tar.xz', '.tgz', '.tbz', '.zip', '.tar'] as const

/** A wheel's build tag: digits, then optionally a word (PEP 427). */
const BUILD_TAG = /^[0-9][a-z0-9_.]*$/i
/** A compatibility tag set: dot-separated words. */
const TAG_PART = /^[a-z0-9_.]+$/i

function versionOf(kind: DistributionKind, raw: string, build?: string): FileNameVersion | undefined {
  // The specification's `v` prefix and whitespace are legal in a version but never in a file's version field.
  if (raw === '' || /^[vV]|\s/.test(raw)) return undefined
  const parsed = parsePep440(raw)
  if (parsed === undefined) return undefined
  const result: FileNameVersion = { kind, raw, version: formatPep440(parsed), parsed }
  return build === undefined ? result : { ...result, build }
}

function wheelVersion(stem: string, project: string): FileNameVersion | undefined {
  const parts = stem.split('-')
  if (parts.length !== 5 && parts.length !== 6) return undefined
  const [name, raw] = parts as [string, string]
  if (normalizeProjectName(name) !== project) return undefined
  const tags = parts.slice(-3)
  if (!tags.every((p) => TAG_PART.test(p))) return undefined
  const build = parts.length === 6 ? parts[2] as string : undefined
  if (build !== undefined && !BUILD_TAG.test(build)) return undefined
  return versionOf('wheel', raw, build)
}

function sdistVersion(stem: string, project: string): FileNameVersion | undefined {
  for (let i = stem.indexOf('-'); i > 0; i = stem.indexOf('-', i + 1)) {
    if (normalizeProjectName(stem.slice(0, i)) === project) return versionOf('sdist', stem.slice(i + 1))
  }
  return undefined
}

/**
 * The version of `filename` as a file of `project` (any spelling; it is
 * normalised here), or undefined when the name is not a wheel or source
 * distribution of that project with a PEP 440 version.
 */
export function fileNameVersion(filename: string, project: string): FileNameVersion | undefined {
  const normal = normalizeProjectName(project)
  const lower = filename.toLowerCase()
  if (lower.endsWith('.whl')) return wheelVersion(filename.slice(0, -4), normal)
  for (const suffix of SDIST_SUFFIXES) {
    if (lower.endsWith(suffix)) return sdistVersion(filename.slice(0, -suffix.length), normal)
  }
  return undefined
}
