/**
 * The gate of a merged `py` project page (issue 16), a pure function around
 * the mount's rule evaluator.
 *
 * - A file's version is read from its file name (file-name-version.ts); a
 *   file whose version cannot be read is dropped and counted, private or
 *   public (nothing can gate or resolve it).
 * - A project whose PEP 792 status is `quarantined` offers no files.
 * - Private files are trusted: kept without a rule, except a file whose
 *   version a malware record names when the mount has DenyIfMalicious
 *   (`privateVerdict`, engine/policy/private-malware-gate.ts): it is
 *   withheld with that refusal, and its version leaves `versions`, as the
 *   packument merge drops such a private version (issue 31 item 4).
 * - Each public file is put to the rules as its version, with the file's
 *   own PEP 700 `upload-time` as the publish time. PyPI lets a maintainer
 *   add files to an old release, so the quarantine runs per file: an old
 *   version's new wheel waits out the quarantine while its old files stay.
 *   Rules that read only the version (advisories, identities) decide the
 *   same for every file of a version: a file survives when its version does.
 *   Decisions are memoised per (version, upload time).
 * - A public file without an upload time has no publish time, so
 *   `AllowIfOlderThan` abstains on it and it cannot pass a quarantine; the
 *   result counts such refused files once for the caller to log once per
 *   project.
 * - `versions` (PEP 700) becomes the surviving files' versions plus the
 *   private page's own list, in PEP 440 order.
 */
import { comparePep440, formatPep440, parsePep440 } from '../advisory/artifact/pep440.js'
import type { Decision, VersionFacts } from '../policy/decision.js'
import { fileNameVersion } from './file-name-version.js'
import type { MergedFile, MergedProject } from './project-merge.js'
import { normalizeProjectName } from './project-name.js'
import { QUARANTINED } from './simple-model.js'

/** The mount's gate for one public file's version (the evaluator at admission). */
export type DecideFile = (facts: VersionFacts) => Decision

/** The private side's one judgement: the refusal of a private version a malware record names, else undefined (PrivateVerdict). */
export type JudgePrivate = (name: string, version: string) => Decision | undefined

export interface WithheldFile {
  readonly file: MergedFile
  /** PEP 440 normal form. */
  readonly version: string
  readonly decision: Decision
}

export interface GateResult {
  /** The page to render: surviving files, recomputed versions. */
  readonly project: MergedProject
  /** Public files the rules refused, and private files `privateVerdict` refused, with why (the file route answers them with the decision's status). */
  readonly withheld: readonly WithheldFile[]
  /** Files dropped because their version cannot be read from the name. */
  readonly unreadableVersions: readonly MergedFile[]
  /** Refused public files that had no upload time (report once per project). */
  readonly refusedWithoutUploadTime: number
  /** True when the PEP 792 status `quarantined` emptied the page. */
  readonly projectQuarantined: boolean
}

/**
 * Gates `project` (merge output). `privateVersions` is the private page's
 * PEP 700 list, kept whole: private releases are trusted even without files.
 */
export function gateProject(project: MergedProject, decide: DecideFile, privateVersions: readonly string[] = [], privateVerdict?: JudgePrivate): GateResult {
  const name = normalizeProjectName(project.name)
  if (project.projectStatus?.status === QUARANTINED) {
    return {
      project: Object.freeze({ ...project, files: Object.freeze([]), versions: Object.freeze([]) }),
      withheld: [],
      unreadableVersions: [],
      refusedWithoutUploadTime: 0,
      projectQuarantined: true,
    }
  }
  const kept: MergedFile[] = []
  const withheld: WithheldFile[] = []
  const unreadable: MergedFile[] = []
  const versions = new Map<string, ReturnType<typeof parsePep440>>()
  const memo = new Map<string, Decision>()
  const privateMemo = new Map<string, Decision | undefined>()
  const privateRefusal = (version: string): Decision | undefined => {
    if (privateVerdict === undefined) return undefined
    if (!privateMemo.has(version)) privateMemo.set(version, privateVerdict(name, version))
    return privateMemo.get(version)
  }
  let withoutTime = 0
  for (const file of project.files) {
    const v = fileNameVersion(file.filename, name)
    if (v === undefined) {
      unreadable.push(file)
      continue
    }
    if (file.origin === 'private') {
      const refusal = privateRefusal(v.version)
      if (refusal !== undefined) {
        withheld.push({ file, version: v.version, decision: refusal })
        continue
      }
    } else {
      const key = `${v.version} ${file.uploadMs ?? ''}`
      let decision = memo.get(key)
      if (decision === undefined) {
        decision = decide({
          ecosystem: 'py',
          name,
          version: v.version,
          publishedAt: file.uploadMs === undefined ? undefined : new Date(file.uploadMs),
          publishedMs: file.uploadMs,
        })
        memo.set(key, decision)
      }
      if (decision.verdict !== 'admit') {
        withheld.push({ file, version: v.version, decision })
        if (file.uploadMs === undefined) withoutTime++
        continue
      }
    }
    kept.push(file)
    versions.set(v.version, v.parsed)
  }
  for (const raw of privateVersions) {
    const parsed = parsePep440(raw)
    if (parsed === undefined) continue
    const version = formatPep440(parsed)
    if (privateRefusal(version) === undefined) versions.set(version, parsed)
  }
  const ordered = [...versions.entries()]
    .sort((a, b) => comparePep440(a[1] as NonNullable<typeof a[1]>, b[1] as NonNullable<typeof b[1]>))
    .map(([v]) => v)
  return {
    project: Object.freeze({ ...project, files: Object.freeze(kept), versions: Object.freeze(ordered) }),
    withheld,
    unreadableVersions: unreadable,
    refusedWithoutUploadTime: withoutTime,
    projectQuarantined: false,
  }
}
