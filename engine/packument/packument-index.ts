/**
 * What the scanner learns about one upstream packument: byte positions in
 * its SourceBytes, never a tree of values. Offsets are absolute positions in
 * the document; a "member" runs from its key's opening quote to the end of
 * its value, so it can be copied out as `"key": value` exactly as it came.
 */
import type { SourceBytes } from './source-bytes.js'

export interface Member {
  readonly key: string
  readonly keyStart: number
  readonly valueStart: number
  readonly valueEnd: number
  /** The value is a string token with neither escapes nor non-ASCII bytes. */
  readonly plain: boolean
}

/** Flags of a VersionEntry. */
export const VERSION_HAS_INSTALL_SCRIPT = 1 // scripts.preinstall, install or postinstall is set
export const VERSION_HAS_INSTALL_SCRIPT_MEMBER = 2 // the manifest carries `hasInstallScript` itself
export const VERSION_HAS_BUNDLE_DEPENDENCIES = 4 // the manifest carries `bundleDependencies`
// Recorded only when the scanner is told to (ScannerOptions recordTrust, recordScripts): what the history rules read.
export const VERSION_TRUSTED_PUBLISHER = 8 // `_npmUser.trustedPublisher` is set (truthy)
export const VERSION_PROVENANCE = 16 // `dist.attestations.provenance` is set (truthy)
export const VERSION_DECLARES_INSTALL_SCRIPT = 32 // `hasInstallScript: true`

/** Codes of the manifest-member pool, which holds only the members the abbreviated form renders. */
export const MEMBER_KEEP = 1
/** `bundledDependencies`: kept as `bundleDependencies` when that is absent. */
export const MEMBER_BUNDLED = 2
/** The low bits of a pool code that say which of the above it is. */
export const MEMBER_KIND = 3
/**
 * Flag of a pool code: the member directly follows the previous pooled
 * member of its manifest (no member between), so only whitespace and one
 * comma separate them and render copies the two as one piece.
 */
export const MEMBER_ADJACENT = 4

/** Integers per member in the pool: keyStart, valueStart, valueEnd, code. */
export const MEMBER_STRIDE = 4

/** The start of a manifest's `name` or `version` that is present but not a string. */
export const NOT_A_STRING = -2

/** One entry of `versions`. A string slice absent from the manifest is -1. */
export class VersionEntry {
  keyStart = 0
  valueStart = 0
  valueEnd = 0
  tarballStart = -1
  tarballEnd = -1
  tarballPlain = false
  integrityStart = -1
  integrityEnd = -1
  integrityPlain = false
  shasumStart = -1
  shasumEnd = -1
  shasumPlain = false
  /**
   * The manifest's own `name` and `version` string tokens, the last of each
   * as JSON.parse keeps it; the merge checks them against the key. -1:
   * absent; NOT_A_STRING: present with another kind of value.
   */
  nameStart = -1
  nameEnd = -1
  namePlain = false
  versionStart = -1
  versionEnd = -1
  versionPlain = false
  /** The (plain) `name` token is PackumentIndex.manifestName, compared as it was scanned. */
  nameIsCommon = false
  /** The (plain) `version` token is the key itself, compared as it was scanned. */
  versionIsKey = false
  /** The tarball was counted against `maxArtifactCount` (once per version, however many `dist` members it has). */
  artifactCounted = false
  /** First member of this manifest in the pool, in members (not integers). */
  memberFirst = 0
  memberCount = 0
  flags = 0
  /** Position among the members of `versions` (0, 1, ...): consecutive ordinals are separated only by a comma and whitespace. */
  ordinal = 0
  /**
   * The manifest's `scripts`, `dependencies`, `optionalDependencies` and
   * `peerDependencies` objects as value slices (the last of each, as
   * JSON.parse keeps it; -1: absent or not an object). Recorded only when
   * the scanner is told to (ScannerOptions recordSlices): what
   * DenyIfInstallScriptChanged and DenyIfDependencyAdded compare.
   */
  scriptsStart = -1
  scriptsEnd = -1
  dependenciesStart = -1
  dependenciesEnd = -1
  optionalDependenciesStart = -1
  optionalDependenciesEnd = -1
  peerDependenciesStart = -1
  peerDependenciesEnd = -1
  constructor(readonly version: string) {}
}

export interface PackumentIndex {
  readonly source: SourceBytes
  /** Size of the document, bytes. */
  readonly byteLength: number
  /** Top-level members in document order (a repeated key keeps its first place and its last value, as JSON.parse does). */
  readonly members: ReadonlyMap<string, Member>
  readonly versions: ReadonlyMap<string, VersionEntry>
  readonly time: ReadonlyMap<string, Member>
  readonly distTags: ReadonlyMap<string, Member>
  /**
   * Manifest members for the abbreviated form, MEMBER_STRIDE integers each;
   * empty when the scanner was told not to record them.
   */
  readonly memberPool: Int32Array
  readonly membersRecorded: boolean
  /**
   * The `name` of the first manifest that has a string one. Nearly every
   * manifest repeats it, so the scanner notes which do (VersionEntry.nameIsCommon)
   * and the merge compares this one string with the package name, not each.
   */
  readonly manifestName: string | undefined
}

/** Decodes a string member's value; undefined when the value is not a string. */
export function memberString(index: PackumentIndex, member: Member | undefined): string | undefined {
  if (member === undefined) return undefined
  if (index.source.byteAt(member.valueStart) !== 0x22) return undefined
  return index.source.jsonString(member.valueStart, member.valueEnd, member.plain)
}
