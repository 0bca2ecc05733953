/**
 * The manifest the worker publishes (issue 12): the gated public manifest of
 * the job's version, with the same `dist.integrity` and `shasum`, so a client
 * that resolved through the proxy before and after mirroring sees the same
 * integrity.
 *
 * Choice (the job stays small, SPEC.md 2.8; the embedded queue bounds its
 * size): the job carries only the URL, the name, the version and the digests
 * it was admitted with; the worker reads the version's manifest from the
 * public upstream through the same client and egress policy as the public
 * leg, indexes the document with the packument scanner and parses that one
 * manifest. The manifest must still carry the job's digests byte for byte:
 * the job's digests were what the gate admitted, so an upstream that has
 * since changed the version's digests is refused as an integrity mismatch,
 * never published. The proxy relays a public manifest unchanged except for
 * `dist.tarball` (SPEC.md 2.1, 2.3), so this is the gated manifest; the
 * worker points `dist.tarball` at the target's conventional location.
 *
 * Before that read, a packument the proxy already holds is asked
 * (retained-packuments.ts, issue 29 item 3): the version found there with
 * the job's digests is the same manifest, without the public read; anything
 * else there falls back to the public read. `ManifestReads` counts where
 * each manifest came from (`service.mirror.manifest.reads`).
 */
import { ServiceError } from '../errors.js'
import type { FetchedDocument, FetchDocumentOptions } from '../upstream/upstream-client.js'
import { NO_STRUCTURE_LIMITS, scanPackument } from '../packument/scanner.js'
import type { MirrorJob } from './mirror-job.js'
import type { RetainedPackuments, RetainedSource } from './retained-packuments.js'

/** What the worker needs of the public upstream: the public leg's own client satisfies it. */
export interface ManifestSource {
  fetchDocument(packageName: string, options?: FetchDocumentOptions): Promise<FetchedDocument>
}

export type ManifestLookup =
  | { readonly kind: 'manifest'; readonly manifest: Record<string, unknown> }
  | { readonly kind: 'missing'; readonly detail: string }
  | { readonly kind: 'mismatch'; readonly detail: string; readonly integrity: string | undefined; readonly shasum: string | undefined }

type ChunkCharge = (chunk: Uint8Array) => Promise<void> | undefined

/** Where the manifests came from: a packument the proxy held (`retained`, `shared`) or the public upstream (`public`). */
export class ManifestReads {
  readonly #counts: Record<RetainedSource | 'public', number> = { retained: 0, shared: 0, public: 0 }

  record(source: RetainedSource | 'public'): void { this.#counts[source]++ }

  snapshot(): Record<RetainedSource | 'public', number> { return { ...this.#counts } }
}

export interface GatedManifestSources {
  readonly source: ManifestSource
  readonly retained?: RetainedPackuments | undefined
  readonly reads?: ManifestReads | undefined
}

/**
 * The job's version manifest: from a packument the proxy holds when it
 * lists the version with the job's digests, else from the public upstream.
 * Throws the client's ServiceError when the public read fails.
 */
export async function readGatedManifest(sources: GatedManifestSources, job: MirrorJob, signal?: AbortSignal, charge?: ChunkCharge): Promise<ManifestLookup> {
  const held = await sources.retained?.read(job.package, signal).catch(() => undefined)
  if (held !== undefined) {
    // The held bytes are already in memory; the scan's index is what this costs, charged like a read (SPEC.md 8.1).
    if (charge !== undefined) for (const chunk of held.chunks) await charge(chunk)
    const found = manifestIn(held.chunks, job)
    if (found.kind === 'manifest') {
      sources.reads?.record(held.source)
      return found
    }
  }
  const read = await readPublicManifest(sources.source, job, signal, charge)
  sources.reads?.record('public')
  return read
}

/** Reads the job's version manifest from the public upstream; throws the client's ServiceError when the read fails. */
export async function readPublicManifest(source: ManifestSource, job: MirrorJob, signal?: AbortSignal, onChunk?: ChunkCharge): Promise<ManifestLookup> {
  const doc = await source.fetchDocument(job.package, { accept: 'application/json', ...(signal === undefined ? {} : { signal }), ...(onChunk === undefined ? {} : { onChunk }) })
  // An unconditional read never answers not-modified; a miss is what the job can act on.
  if (doc.kind !== 'document') return { kind: 'missing', detail: `the public upstream answered ${doc.kind === 'miss' ? doc.status : 304} for the package` }
  return manifestIn(doc.chunks, job)
}

/** The job's version manifest in a packument's bytes, checked against the job's name, version and digests. */
function manifestIn(chunks: readonly Uint8Array[], job: MirrorJob): ManifestLookup {
  const index = scanPackument(chunks, { limits: NO_STRUCTURE_LIMITS, recordMembers: false })
  const entry = index.versions.get(job.version)
  if (entry === undefined) return { kind: 'missing', detail: 'the public upstream no longer lists the version' }
  let manifest: unknown
  try {
    manifest = JSON.parse(index.source.utf8(entry.valueStart, entry.valueEnd))
  } catch (cause) {
    throw new ServiceError('UPSTREAM_DECODE', { cause, data: { package: job.package, reason: 'the version manifest is not JSON' } })
  }
  if (typeof manifest !== 'object' || manifest === null || Array.isArray(manifest)) {
    return { kind: 'missing', detail: 'the version manifest is not an object' }
  }
  const m = manifest as Record<string, unknown>
  const dist = (typeof m['dist'] === 'object' && m['dist'] !== null ? m['dist'] : {}) as Record<string, unknown>
  const integrity = typeof dist['integrity'] === 'string' ? dist['integrity'] : undefined
  const shasum = typeof dist['shasum'] === 'string' ? dist['shasum'] : undefined
  if (m['name'] !== job.package || m['version'] !== job.version) {
    return { kind: 'mismatch', detail: 'the manifest names another package or version', integrity, shasum }
  }
  if (integrity !== job.integrity || shasum !== job.shasum) {
    return { kind: 'mismatch', detail: 'the manifest digests differ from the admitted ones', integrity, shasum }
  }
  return { kind: 'manifest', manifest: m }
}

/** The manifest as published: the gated one with `dist.tarball` on the target. */
export function publishedManifest(manifest: Readonly<Record<string, unknown>>, tarball: string): Record<string, unknown> {
  const dist = (typeof manifest['dist'] === 'object' && manifest['dist'] !== null ? manifest['dist'] : {}) as Record<string, unknown>
  return { ...manifest, dist: { ...dist, tarball } }
}
