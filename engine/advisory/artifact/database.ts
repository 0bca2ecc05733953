/**
 * The advisory database as the rules see it (SPEC.md 1.7, 2.9, 3.5).
 *
 * Two implementations: the compiled artifact (Pilot's binary format, loaded
 * once into a SharedArrayBuffer and read in place by every worker) and an
 * in-memory one for tests. Rules read only through this interface, so they
 * never know which one they have.
 *
 * Ecosystem keys are the mount keys of SPEC.md: `js` (OSV `npm`) and `py`
 * (OSV `PyPI`).
 */

export type Ecosystem = 'js' | 'py'

export const OSV_ECOSYSTEM: Readonly<Record<Ecosystem, string>> = Object.freeze({ js: 'npm', py: 'PyPI' })

/** One advisory that affects, or is remediated by, a given version. */
export interface AdvisoryMatch {
  /** OSV id, e.g. `GHSA-xxxx-xxxx-xxxx`, `MAL-2024-1`, `PYSEC-2021-1`. */
  readonly id: string
  /** CVE ids among the advisory's id and aliases (`CVE-YYYY-NNNN`). */
  readonly cves: readonly string[]
  /**
   * Highest EPSS probability (0..1) over `cves`, or undefined when no CVE of
   * the advisory has an EPSS score (or the artifact carries no EPSS data).
   */
  readonly epss: number | undefined
}

/** Provenance and dates recorded by Pilot (SPEC.md 2.9). */
/** How logs write a metadata value never recorded (SPEC.md 2.9). */
export const UNRECORDED = '<unrecorded>'

export interface AdvisoryMetadata {
  readonly ecosystem: Ecosystem
  /** `host:port` of the OSV source. */
  readonly osvSource: string
  /** Source URL with userinfo, query and fragment removed. */
  readonly osvSourceUrl: string
  readonly compiledAt: Date
  /** Newest advisory `modified` date, or undefined when never recorded. */
  readonly newestAdvisoryAt: Date | undefined
  /** EPSS `score_date`, or undefined when never recorded. */
  readonly epssScoreDate: Date | undefined
  readonly epssStatus: 'available' | 'unavailable' | undefined
  readonly rowCount: number
}

/** Severity as npm's audit answer spells it. */
export type AdvisorySeverity = 'low' | 'moderate' | 'high' | 'critical'

/**
 * One advisory of one package as `npm audit` shows it (the artifact's
 * details section, format 2). Fields an artifact does not record (format 1,
 * or a record that says nothing) are undefined.
 */
export interface AdvisoryReport {
  readonly id: string
  readonly cves: readonly string[]
  readonly title: string | undefined
  readonly url: string | undefined
  readonly severity: AdvisorySeverity | undefined
  readonly cwe: readonly string[]
  readonly cvss: { readonly score: number; readonly vectorString: string } | undefined
  /** Every affected version of the package as a semver range, when recorded. */
  readonly vulnerableVersions: string | undefined
  /** Which of the versions asked about it affects (at least one). */
  readonly affectedVersions: readonly string[]
}

export interface AdvisoryDatabase {
  readonly ecosystem: Ecosystem
  readonly metadata: AdvisoryMetadata
  /**
   * The object's publication time in the store (the push time, SPEC.md 2.9),
   * or undefined when the store reported none; undefined counts as expired
   * (SPEC.md 3.5).
   */
  readonly publishedAt: Date | undefined
  /** Advisories (not withdrawn) whose ranges or version lists include `version`. */
  affecting(name: string, version: string): readonly AdvisoryMatch[]
  /**
   * Advisories that `version` remediates: it is a `fixed` boundary of a range
   * of an advisory that affects earlier versions of the package, and is not
   * itself affected by that advisory.
   */
  remediating(name: string, version: string): readonly AdvisoryMatch[]
  /**
   * Whether any advisory of `name` is a malicious-package record (`MAL-`
   * id), whatever the version: one package lookup, so a path that judges
   * only malware (the private side, DenyIfMalicious) reads no version for
   * the names no such record names. Absent on a database that cannot say
   * cheaply (test doubles): the caller then looks the version up.
   */
  hasMalware?(name: string): boolean
  /**
   * The advisories that affect any of `versions` of `name`, with their
   * details, in the package's entry order; absent on a database that keeps
   * no details (test doubles).
   */
  report?(name: string, versions: readonly string[]): readonly AdvisoryReport[]
}
