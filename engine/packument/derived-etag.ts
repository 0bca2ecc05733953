/**
 * A strong ETag of the synthesized packument without hashing its bytes
 * (SHA-256 of a 10 MB body is ~7 ms, a sixth of the whole pipeline). The
 * body is a deterministic function of: both upstream documents' bytes, which
 * versions were kept, the form, the package name, the base URL and this
 * code's output rules. When every upstream document present came with a
 * strong ETag, those tags stand for its bytes, and a SHA-256 of all of the
 * above identifies the body as well as a hash of the body does: different
 * bytes always get a different tag. (The same bytes reached from different
 * upstream tags get different tags, which costs a client a full response,
 * never a stale one; RFC 9110 8.8.1 allows it.) Otherwise the caller hashes
 * the body (render.ts strongEtag).
 */
import { Buffer } from 'node:buffer'
import { createHash } from 'node:crypto'
import type { MergePlan } from './merge.js'

/**
 * Bump whenever render or merge may write different bytes for the same
 * inputs, so a tag derived by the old code never names the new code's bytes.
 */
export const OUTPUT_REVISION = 2 // 2: a public document's policyRestrictions and stagedVersions are no longer relayed; duplicate keys read as JSON.parse reads them

/** The upstream ETags of the documents, as received (quotes included). */
export interface UpstreamEtags {
  readonly privateEtag?: string | undefined
  readonly publicEtag?: string | undefined
}

/** RFC 9110 8.8.3 entity-tag without the weak prefix: DQUOTE *etagc DQUOTE. */
const STRONG = /^"[\x21\x23-\x7e\x80-\xff]*"$/

export function isStrongEtag(tag: string | undefined): tag is string {
  return tag !== undefined && STRONG.test(tag)
}

/**
 * The derived tag, or undefined when a present document has no strong
 * upstream tag. `hasPrivate` and `hasPublic` say which documents were merged.
 */
export function derivedEtag(plan: MergePlan, abbreviated: boolean, hasPrivate: boolean, hasPublic: boolean, tags: UpstreamEtags): string | undefined {
  if (hasPrivate && !isStrongEtag(tags.privateEtag)) return undefined
  if (hasPublic && !isStrongEtag(tags.publicEtag)) return undefined
  // Which side each kept version came from follows from the documents; the
  // kept list itself is what the gate decided (in the audit view, with what
  // the answer says of each withheld version it lists).
  const kept = plan.versions.map((planned) => (planned.withheldNote === undefined ? planned.version : [planned.version, planned.withheldNote]))
  const identity = JSON.stringify([
    OUTPUT_REVISION,
    abbreviated ? 'abbreviated' : 'full',
    plan.packageName,
    Buffer.from(plan.tarballPrefix).toString('utf8'),
    hasPrivate ? tags.privateEtag : null,
    hasPublic ? tags.publicEtag : null,
    kept,
  ])
  return `"d${createHash('sha256').update(identity).digest('base64url')}"`
}
