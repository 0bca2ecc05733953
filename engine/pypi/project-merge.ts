/**
 * Merge of a `py` project's private and public pages (issue 16; SPEC.md
 * 1.2 as for npm), a pure function. Gating is project-gate.ts.
 *
 * - Private files are trusted: all are kept, never gated.
 * - A private page hides the public page's files entirely unless the mount
 *   allows mixing (`privateHidesPublic: false`): the dependency-confusion
 *   guard, the behaviour devpi users rely on (a private `foo` is never
 *   topped up by a public `foo` someone else registered).
 * - When mixing, a public file whose name a private file has (compared
 *   case-insensitively, as the file route resolves names) is dropped and
 *   the private one wins; when both state a digest under the same algorithm
 *   and the values differ, the collision is reported as a mismatch for the
 *   caller to log and count.
 * - The project status (PEP 792) is the private page's when it has one;
 *   a public status applies only while public files are offered.
 */
import type { ProjectStatus, SimpleFile, SimpleProject } from './simple-model.js'

export type FileOrigin = 'private' | 'public'

export interface MergedFile extends SimpleFile {
  readonly origin: FileOrigin
}

export interface MergedProject extends SimpleProject {
  readonly files: readonly MergedFile[]
}

export interface DigestMismatch {
  readonly filename: string
  /** Algorithms both sides state, with differing values. */
  readonly algorithms: readonly string[]
}

export interface MergeOptions {
  /** Default true: a private page hides the public one (module comment). */
  readonly privateHidesPublic?: boolean
}

export interface MergeResult {
  readonly project: MergedProject
  /** Private/public name collisions with differing digests (logged and counted by the caller). */
  readonly mismatches: readonly DigestMismatch[]
  /** Public files dropped because a private file has the name. */
  readonly shadowedPublicFiles: number
  /** Public files not offered because the private page hides the public one. */
  readonly hiddenPublicFiles: number
}

function tagged(files: readonly SimpleFile[], origin: FileOrigin): MergedFile[] {
  return files.map((f) => Object.freeze({ ...f, origin }))
}

function differingAlgorithms(a: SimpleFile, b: SimpleFile): string[] {
  return Object.keys(a.hashes).filter((alg) => b.hashes[alg] !== undefined && b.hashes[alg] !== a.hashes[alg])
}

function lowerApiVersion(a: string, b: string): string {
  return Number(a.split('.')[1]) <= Number(b.split('.')[1]) ? a : b
}

/** Merges the pages; undefined when neither upstream has the project. */
export function mergeProjects(
  privatePage: SimpleProject | undefined,
  publicPage: SimpleProject | undefined,
  options: MergeOptions = {},
): MergeResult | undefined {
  if (privatePage === undefined && publicPage === undefined) return undefined
  if (privatePage === undefined || publicPage === undefined) {
    const page = (privatePage ?? publicPage) as SimpleProject
    return {
      project: Object.freeze({ ...page, files: Object.freeze(tagged(page.files, privatePage === undefined ? 'public' : 'private')) }),
      mismatches: [],
      shadowedPublicFiles: 0,
      hiddenPublicFiles: 0,
    }
  }
  if (options.privateHidesPublic ?? true) {
    return {
      project: Object.freeze({ ...privatePage, files: Object.freeze(tagged(privatePage.files, 'private')) }),
      mismatches: [],
      shadowedPublicFiles: 0,
      hiddenPublicFiles: publicPage.files.length,
    }
  }
  const byName = new Map<string, SimpleFile>()
  for (const f of privatePage.files) byName.set(f.filename.toLowerCase(), f)
  const files = tagged(privatePage.files, 'private')
  const mismatches: DigestMismatch[] = []
  let shadowed = 0
  for (const f of publicPage.files) {
    const mine = byName.get(f.filename.toLowerCase())
    if (mine === undefined) {
      files.push(Object.freeze({ ...f, origin: 'public' }))
      continue
    }
    shadowed++
    const algorithms = differingAlgorithms(mine, f)
    if (algorithms.length > 0) mismatches.push({ filename: mine.filename, algorithms })
  }
  const status: ProjectStatus | undefined = privatePage.projectStatus ?? publicPage.projectStatus
  const merged: { -readonly [K in keyof MergedProject]: MergedProject[K] } = {
    name: privatePage.name,
    files: Object.freeze(files),
    apiVersion: lowerApiVersion(privatePage.apiVersion, publicPage.apiVersion),
  }
  if (status !== undefined) merged.projectStatus = status
  if (privatePage.versions !== undefined || publicPage.versions !== undefined) {
    merged.versions = [...new Set([...(privatePage.versions ?? []), ...(publicPage.versions ?? [])])]
  }
  return { project: Object.freeze(merged), mismatches, shadowedPublicFiles: shadowed, hiddenPublicFiles: 0 }
}
