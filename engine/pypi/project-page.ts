/**
 * One `py` project page from its upstream pages (issue 16), the work of a
 * pool task: read each page in the format its upstream answered (PEP 691
 * JSON, else PEP 503 HTML), merge (project-merge.ts), gate
 * (project-gate.ts), then render the format the client negotiated. Pure:
 * the worker supplies `decide` and does the charging between plan and render.
 *
 * What the main thread keeps from it (the `py` twin of a packument's
 * selected versions): every file the page offers and every public file the
 * rules withheld, by file name, so the file route resolves a file URL
 * without re-reading the page and explains a refusal with the decision.
 */
import { createHash } from 'node:crypto'
import { earliestStep, listingRegateAt, type GateClock } from '../listing/regate-at.js'
import { withholdingOf, type VersionObservation, type Withholding } from '../listing/withholding.js'
import type { RuleKind } from '../policy/decision.js'
import type { PageFormat } from './content-negotiation.js'
import { fileNameVersion } from './file-name-version.js'
import { gateProject, type DecideFile, type JudgePrivate } from './project-gate.js'
import { mergeProjects, type DigestMismatch, type FileOrigin, type MergedFile, type MergedProject } from './project-merge.js'
import { normalizeProjectName } from './project-name.js'
import { readSimpleHtml } from './simple-html-reader.js'
import { readSimpleJson } from './simple-json-reader.js'
import type { Hashes, ReadLimits, SimpleProject } from './simple-model.js'
import { renderSimpleHtml, renderSimpleJson } from './simple-render.js'

/** One upstream's answer for the page, as fetched. */
export interface UpstreamPage {
  readonly body: Uint8Array
  /** The answer's Content-Type: JSON media types read as PEP 691, anything else as PEP 503 HTML. */
  readonly contentType: string | undefined
  /** The page's own URL, which relative file URLs resolve against. */
  readonly url: string
}

/** What the file route needs of one file (kept per file name on the main thread). */
export interface PageFile {
  readonly filename: string
  /** The upstream URL of the file, kept only for the upstream fetch. */
  readonly url: string
  readonly origin: FileOrigin
  /** PEP 440 normal form, from the file name. */
  readonly version: string
  readonly hashes: Hashes
  /** PEP 700 upload time, ms since the epoch. */
  readonly uploadMs?: number
  /** The page offers `{url}.metadata` (PEP 658). */
  readonly coreMetadata: boolean
  /** PEP 740 provenance URL (upstream). */
  readonly provenance?: string
  /** False when the rules withheld it: the file route refuses it with its own decision. */
  readonly offered: boolean
}

export interface PageCounts {
  readonly files: number
  readonly withheld: number
  /** Files dropped because no version could be read from the name. */
  readonly unreadableVersions: number
  /** Entries the readers dropped as unusable. */
  readonly unusableEntries: number
  /** Refused public files that carried no upload time. */
  readonly withoutUploadTime: number
  readonly hiddenPublicFiles: number
  readonly shadowedPublicFiles: number
}

export interface ProjectPagePlan {
  readonly project: string
  readonly gated: MergedProject
  readonly files: readonly PageFile[]
  readonly counts: PageCounts
  readonly mismatches: readonly DigestMismatch[]
  readonly observations: readonly VersionObservation[]
  readonly advisoryAnswered: readonly RuleKind[]
  /** Set when the upstreams listed public files and the rules withheld every one of them while nothing else is offered. */
  readonly withholding: Withholding | undefined
  readonly projectQuarantined: boolean
  /** SPEC.md 8.1 output basis: the source pages' bytes. */
  readonly basisBytes: number
  /**
   * When a retained copy of this page must be gated again
   * (engine/listing/regate-at.ts: a waiver or the advisory push expires, a
   * public file's quarantine ends); undefined: its time to live decides.
   */
  readonly regateAt: number | undefined
}

/** The mount's gate as the worker builds it (workers/policy-gate.ts Decide): the file decision, its clock, the private side's judgement. */
export type PageDecide = DecideFile & {
  readonly clock?: GateClock | undefined
  readonly privateVerdict?: JudgePrivate | undefined
}

export interface ProjectPageInput {
  /** The PEP 503 normal name asked for. */
  readonly project: string
  readonly privatePage: UpstreamPage | undefined
  readonly publicPage: UpstreamPage | undefined
  readonly privateHidesPublic: boolean
  readonly limits: ReadLimits
  readonly decide: PageDecide
}

function isJson(contentType: string | undefined): boolean {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? ''
  return type === 'application/json' || type.endsWith('+json')
}

function read(page: UpstreamPage | undefined, project: string, limits: ReadLimits): { project: SimpleProject, dropped: number } | undefined {
  if (page === undefined) return undefined
  const result = isJson(page.contentType)
    ? readSimpleJson(page.body, project, page.url, limits)
    : readSimpleHtml(page.body, project, page.url, limits)
  return { project: result.project, dropped: result.droppedFiles }
}

function pageFile(file: MergedFile, version: string, offered: boolean): PageFile {
  return {
    filename: file.filename,
    url: file.url,
    origin: file.origin,
    version,
    hashes: file.hashes,
    ...(file.uploadMs === undefined ? {} : { uploadMs: file.uploadMs }),
    coreMetadata: file.coreMetadata !== undefined,
    ...(file.provenance === undefined ? {} : { provenance: file.provenance }),
    offered,
  }
}

/** Reads, merges and gates; undefined when neither upstream has the project. */
export function planProjectPage(input: ProjectPageInput): ProjectPagePlan | undefined {
  const project = normalizeProjectName(input.project)
  const priv = read(input.privatePage, project, input.limits)
  const pub = read(input.publicPage, project, input.limits)
  const merged = mergeProjects(priv?.project, pub?.project, { privateHidesPublic: input.privateHidesPublic })
  if (merged === undefined) return undefined

  const observations: VersionObservation[] = []
  const answered = new Set<RuleKind>()
  const observed = new Set<string>()
  const clock = input.decide.clock
  const steps = clock?.ageSteps(project) ?? []
  let regateAt = listingRegateAt(clock, project)
  const decide: DecideFile = (facts) => {
    const decision = input.decide(facts)
    if (steps.length > 0 && clock !== undefined) regateAt = earliestStep(regateAt, facts.publishedMs, steps, clock.now)
    // A waiver's admission is reported too: the main thread logs and counts it (engine/policy/waiver-admissions.ts).
    let reported = decision.skipped.length > 0 || decision.waiver !== undefined
    for (const o of decision.advisory) {
      if (o.cause === undefined) answered.add(o.rule)
      else reported = true
    }
    if (reported && !observed.has(facts.version)) {
      observed.add(facts.version)
      observations.push({ version: facts.version, decision })
    }
    return decision
  }
  const judge = input.decide.privateVerdict
  // A private refusal is reported marked private, as the packument merge does (service.policy.malware.refusals{side}).
  const privateVerdict: JudgePrivate | undefined = judge === undefined ? undefined : (name, version) => {
    const refusal = judge(name, version)
    if (refusal !== undefined) observations.push({ version, decision: refusal, private: true })
    return refusal
  }
  const gated = gateProject(merged.project, decide, priv?.project.versions ?? [], privateVerdict)
  const files: PageFile[] = []
  for (const f of gated.project.files) {
    const v = fileNameVersion(f.filename, project)
    if (v !== undefined) files.push(pageFile(f, v.version, true))
  }
  for (const w of gated.withheld) files.push(pageFile(w.file, w.version, false))
  const withholding = gated.project.files.length === 0 && gated.withheld.length > 0
    ? withholdingOf(gated.withheld.map((w) => w.decision), 0)
    : undefined
  return {
    project,
    gated: gated.project,
    files,
    counts: {
      files: gated.project.files.length,
      withheld: gated.withheld.length,
      unreadableVersions: gated.unreadableVersions.length,
      unusableEntries: (priv?.dropped ?? 0) + (pub?.dropped ?? 0),
      withoutUploadTime: gated.refusedWithoutUploadTime,
      hiddenPublicFiles: merged.hiddenPublicFiles,
      shadowedPublicFiles: merged.shadowedPublicFiles,
    },
    mismatches: merged.mismatches,
    observations,
    advisoryAnswered: [...answered],
    withholding,
    projectQuarantined: gated.projectQuarantined,
    basisBytes: (input.privatePage?.body.byteLength ?? 0) + (input.publicPage?.body.byteLength ?? 0),
    regateAt,
  }
}

/** The page in `format`, with its strong ETag (SHA-256 of the body; the format is part of the bytes). */
export function renderProjectPage(plan: ProjectPagePlan, format: PageFormat, baseUrl: string): { body: Uint8Array, etag: string } {
  const text = format === 'json' ? renderSimpleJson(plan.gated, { baseUrl }) : renderSimpleHtml(plan.gated, { baseUrl })
  const body = new Uint8Array(Buffer.from(text, 'utf8'))
  return { body, etag: `"${createHash('sha256').update(body).digest('base64url')}"` }
}
