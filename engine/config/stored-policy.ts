/**
 * The policy document in the object store (issue 31 items 1-3): the object
 * the roles poll (engine/config/policy-source.ts) and the policy commands
 * write. It is JSON; every write is validated whole first, so the store
 * never holds a document a role would refuse for its shape.
 *
 * An edit (`waive`, `freeze`) is a read-modify-write: it reads the object
 * and its ETag, edits, validates, and writes only if the object is still the
 * one it read (If-Match, or If-None-Match `*` when there was none). A writer
 * that lost reads again and redoes its edit on top of the winner's, so two
 * concurrent waivers both land. On a store that ignores the condition
 * (engine/store/object-store.ts), the last writer wins.
 */
import { Buffer } from 'node:buffer'
import { isPreconditionFailed, type ObjectStore } from '../store/object-store.js'
import { parsePolicyDocument, type PolicyDocument, type PolicyReading } from './policy-document.js'
import { POLICY_OBJECT_KEY, readStoredPolicy } from './policy-source.js'

/** How many times an edit is redone after losing to another writer. */
export const EDIT_ATTEMPTS = 5

/** The stored document's text: indented JSON, so it reads well when fetched by hand. */
export function storedText(document: PolicyDocument): Uint8Array {
  return Buffer.from(`${JSON.stringify(document, null, 2)}\n`)
}

/** Writes a validated document as the store's policy, whole (`service policy push`). */
export async function publishPolicy(store: ObjectStore, document: PolicyDocument, digest: string, key: string = POLICY_OBJECT_KEY): Promise<void> {
  await store.put(key, storedText(document), { digest })
}

export type EditOutcome =
  /** Written: the document now in the store. */
  | { readonly kind: 'written'; readonly reading: Extract<PolicyReading, { ok: true }> }
  /** The stored document, or the edited one, does not validate: nothing written. */
  | { readonly kind: 'refused'; readonly stage: 'stored' | 'edited'; readonly problems: readonly string[] }
  /** Every attempt lost to another writer. */
  | { readonly kind: 'contended' }

/**
 * Reads the store's document, applies `edit`, validates the result at
 * `now()` and writes it if the object is unchanged since the read; redone up
 * to EDIT_ATTEMPTS times when another writer came between.
 */
export async function editStoredPolicy(store: ObjectStore, edit: (document: PolicyDocument) => PolicyDocument, now: () => number, key: string = POLICY_OBJECT_KEY): Promise<EditOutcome> {
  for (let attempt = 0; attempt < EDIT_ATTEMPTS; attempt++) {
    const stored = await readStoredPolicy(store, key)
    const current = stored === undefined ? undefined : parsePolicyDocument(stored.text, true, now())
    if (current !== undefined && !current.ok) return { kind: 'refused', stage: 'stored', problems: current.problems }
    const edited = parsePolicyDocument(JSON.stringify(edit(current?.document ?? {})), true, now())
    if (!edited.ok) return { kind: 'refused', stage: 'edited', problems: edited.problems }
    try {
      await store.put(key, storedText(edited.document), { digest: edited.digest }, stored === undefined ? { ifNoneMatch: '*' } : { ifMatch: stored.etag })
      return { kind: 'written', reading: edited }
    } catch (error) {
      if (!isPreconditionFailed(error)) throw error
    }
  }
  return { kind: 'contended' }
}
