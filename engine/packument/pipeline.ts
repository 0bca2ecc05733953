/**
 * One packument, in process: scan → merge and gate → charge → render. The
 * Piscina task (workers/packument-task.ts) runs the same steps in a worker;
 * tests and the bench baseline comparison run them here.
 */
import type { Ecosystem } from '../advisory/artifact/database.js'
import { outputBasisBytes, type BasisDocument } from '../listing/output-basis.js'
import type { VersionObservation, Withholding } from '../listing/withholding.js'
import type { FactNeeds, RuleKind } from '../policy/decision.js'
import { derivedEtag, type UpstreamEtags } from './derived-etag.js'
import { planMerge, type Decide, type DroppedVersion, type MergeCounts, type MergePlan, type SelectedVersion } from './merge.js'
import type { PackumentIndex } from './packument-index.js'
import { renderPackument } from './render.js'
import { PackumentScanner, type StructureLimits } from './scanner.js'

export interface PackumentRequest extends UpstreamEtags {
  readonly packageName: string
  readonly baseUrl: string
  readonly abbreviated: boolean
  readonly limits?: StructureLimits
  readonly ecosystem?: Ecosystem
  readonly decide: Decide
  /** The npm audit view: withheld versions listed, marked (MergeInput.listWithheld). */
  readonly listWithheld?: boolean
}

export interface PackumentOutcome {
  /** The synthesized document; undefined when nothing survived and `withholding` says why. */
  readonly body: Uint8Array | undefined
  readonly etag: string | undefined
  readonly counts: MergeCounts
  readonly selected: readonly SelectedVersion[]
  readonly observations: readonly VersionObservation[]
  readonly dropped: readonly DroppedVersion[]
  readonly advisoryAnswered: readonly RuleKind[]
  readonly withholding: Withholding | undefined
  /** SPEC.md 8.1 output basis of this merge, bytes. */
  readonly basisBytes: number
  /** MergePlan.regateAt: when a retained copy of this answer must be gated again. */
  readonly regateAt?: number | undefined
  /** MergePlan.notice: the `npm-notice` line when versions were withheld. */
  readonly notice?: string | undefined
}

/** Indexes one document given as chunks; `needs` (the gate's Decide.needs) adds the flags the history rules read. */
export function indexDocument(chunks: Iterable<Uint8Array>, abbreviated: boolean, limits?: StructureLimits, needs?: FactNeeds): PackumentIndex {
  const scanner = new PackumentScanner({
    recordMembers: abbreviated,
    ...(limits === undefined ? {} : { limits }),
    ...(needs === undefined ? {} : {
      recordTrust: needs.trust,
      recordScripts: needs.installScripts,
      recordSlices: needs.scriptChanges === true || needs.dependencies === true,
    }),
  })
  for (const chunk of chunks) scanner.push(chunk)
  return scanner.end()
}

function lacking(index: PackumentIndex, other: PackumentIndex | undefined): number {
  if (other === undefined) return 0
  let lacks = 0
  for (const version of other.versions.keys()) if (!index.versions.has(version)) lacks++
  return lacks
}

function measure(index: PackumentIndex | undefined, other: PackumentIndex | undefined): BasisDocument | undefined {
  if (index === undefined) return undefined
  return { bytes: index.byteLength, versions: index.versions.size, lacks: lacking(index, other) }
}

/** SPEC.md 8.1 output basis of merging these two documents, bytes. */
export function basisOf(privateIndex: PackumentIndex | undefined, publicIndex: PackumentIndex | undefined): number {
  return outputBasisBytes(measure(privateIndex, publicIndex), measure(publicIndex, privateIndex))
}

/** Merges, gates and renders two indexed documents (either may be absent). */
export function mergeAndRender(request: PackumentRequest, privateIndex: PackumentIndex | undefined, publicIndex: PackumentIndex | undefined): PackumentOutcome {
  const plan = planPackument(request, privateIndex, publicIndex)
  return renderPlan(plan, request.abbreviated, basisOf(privateIndex, publicIndex), upstreamDerivedEtag(plan, request, privateIndex, publicIndex))
}

/** The body's tag derived from the upstream ETags (derived-etag.ts), or undefined to hash the body. */
export function upstreamDerivedEtag(plan: MergePlan, request: { readonly abbreviated: boolean } & UpstreamEtags, privateIndex: PackumentIndex | undefined, publicIndex: PackumentIndex | undefined): string | undefined {
  if (plan.withholding !== undefined) return undefined
  return derivedEtag(plan, request.abbreviated, privateIndex !== undefined, publicIndex !== undefined, request)
}

export function planPackument(request: PackumentRequest, privateIndex: PackumentIndex | undefined, publicIndex: PackumentIndex | undefined): MergePlan {
  return planMerge({
    packageName: request.packageName,
    baseUrl: request.baseUrl,
    privateIndex,
    publicIndex,
    decide: request.decide,
    ...(request.ecosystem === undefined ? {} : { ecosystem: request.ecosystem }),
    ...(request.listWithheld === true ? { listWithheld: true } : {}),
  })
}

/** Renders a plan; `etag`, when given, is the body's tag derived from its inputs, else the body is hashed. */
export function renderPlan(plan: MergePlan, abbreviated: boolean, basisBytes: number, etag?: string): PackumentOutcome {
  const rendered = plan.withholding === undefined ? renderPackument(plan, abbreviated, etag) : undefined
  return {
    body: rendered?.body,
    etag: rendered?.etag,
    counts: plan.counts,
    selected: plan.selected,
    observations: plan.observations,
    dropped: plan.dropped,
    advisoryAnswered: plan.advisoryAnswered,
    withholding: plan.withholding,
    basisBytes,
    regateAt: plan.regateAt,
    notice: plan.notice,
  }
}

/** The whole pipeline on documents given as chunks (no memory charge: the caller accounts for it). */
export function runPackumentPipeline(
  request: PackumentRequest,
  privateChunks: Iterable<Uint8Array> | undefined,
  publicChunks: Iterable<Uint8Array> | undefined,
): PackumentOutcome {
  const privateIndex = privateChunks === undefined ? undefined : indexDocument(privateChunks, request.abbreviated, request.limits)
  const publicIndex = publicChunks === undefined ? undefined : indexDocument(publicChunks, request.abbreviated, request.limits, request.decide.needs)
  return mergeAndRender(request, privateIndex, publicIndex)
}
