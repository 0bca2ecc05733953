/**
 * The `js` side of a mirror job (issue 12), for the mirror pipeline
 * (mirror-worker.ts, target-protocol.ts): an npm registry that takes
 * `npm publish` (mirror-target.ts).
 *
 * - The job's strongest digest (artifact-digest.ts) is what the bytes must
 *   hash to.
 * - The target's document says whether it holds the version; the same
 *   integrity is already present, another a collision.
 * - The gated manifest is taken from a packument the proxy holds
 *   (retained-packuments.ts) or read from the public upstream
 *   (version-manifest.ts): it must carry the job's digests byte for byte.
 * - The publish document (publish-body.ts) streams with the artifact
 *   base64-encoded inside; its `dist.tarball` points at the target.
 * - 200 and 201 are stored; a 409 may be another delivery that got there
 *   first, so the target is asked again; a 409 for a version it does not
 *   hold (one left half-written) is a refusal.
 */
import { compareDigests, digestSet, expectedDigest } from './artifact-digest.js'
import type { MirrorJob } from './mirror-job.js'
import type { MirrorTarget, TargetVersion } from './mirror-target.js'
import { attachmentName, publishBody, publishDocumentParts } from './publish-body.js'
import type { Answer, Holding, TargetPlan, TargetProtocol, Upload } from './target-protocol.js'
import type { RetainedPackuments } from './retained-packuments.js'
import { publishedManifest, readGatedManifest, type ManifestReads } from './version-manifest.js'

export interface JsTargetProtocolOptions {
  /** Packuments the proxy holds, asked before the public upstream (issue 29 item 3). */
  readonly retained?: RetainedPackuments | undefined
  /** Counts where each manifest came from. */
  readonly reads?: ManifestReads | undefined
}

export class JsTargetProtocol implements TargetProtocol {
  readonly logFields = {}
  readonly #target: Pick<MirrorTarget, 'lookup' | 'publish' | 'artifactUrl' | 'authority'>
  readonly #o: JsTargetProtocolOptions

  constructor(target: Pick<MirrorTarget, 'lookup' | 'publish' | 'artifactUrl' | 'authority'>, options: JsTargetProtocolOptions = {}) {
    this.#target = target
    this.#o = options
  }

  get authority(): string {
    return this.#target.authority
  }

  plan(job: MirrorJob): TargetPlan | { readonly refused: string } {
    const digest = expectedDigest(job.integrity, job.shasum)
    if (digest === undefined) return { refused: 'the job carries no usable digest' }
    const target = this.#target
    return {
      digest,
      lookup: async (signal, charge) => holding(job, await target.lookup(job.package, job.version, signal, charge)),
      prepare: async ({ source, signal, charge }) => {
        const manifest = await readGatedManifest({ source, retained: this.#o.retained, reads: this.#o.reads }, job, signal, charge)
        if (manifest.kind === 'missing') return { refused: 'upstream_refused', reason: manifest.detail, log: { detail: manifest.detail } }
        if (manifest.kind === 'mismatch') {
          return {
            refused: 'integrity_mismatch', reason: manifest.detail,
            log: { detail: manifest.detail, expected: { integrity: job.integrity, shasum: job.shasum }, upstream: { integrity: manifest.integrity, shasum: manifest.shasum } },
          }
        }
        const parts = publishDocumentParts({
          name: job.package,
          version: job.version,
          manifest: publishedManifest(manifest.manifest, target.artifactUrl(job.package, job.filename).href),
          attachment: attachmentName(job.package, job.filename),
        })
        const upload: Upload = {
          send: (artifact, sendSignal) => target.publish(job.package, publishBody(parts, artifact.chunks, (chunk) => artifact.see(chunk), () => artifact.verify()), sendSignal),
        }
        return upload
      },
      mismatch: (actual) => ({
        detail: 'the fetched bytes do not match the admitted digest',
        expected: { integrity: job.integrity, shasum: job.shasum, algorithm: digest.algorithm },
        actual: actual.digest,
      }),
    }
  }

  classify(status: number): Answer {
    if (status === 200 || status === 201) return { kind: 'stored' }
    if (status === 409) return { kind: 'ask-again' }
    return { kind: 'other' }
  }
}

function holding(job: MirrorJob, present: TargetVersion): Holding {
  if (present.kind === 'absent') return present
  const comparison = compareDigests(digestSet(job.integrity, job.shasum), present.digests)
  if (comparison === 'same') return { kind: 'same' }
  return {
    kind: 'other', comparison,
    job: { integrity: job.integrity, shasum: job.shasum },
    held: { integrity: present.integrity, shasum: present.shasum },
    reason: 'the target holds the version with a different integrity',
  }
}
