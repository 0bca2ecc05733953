/**
 * Where a role reads its policy document (issue 31 item 1): a file
 * (`policy.file`) or one object in the object store (`policy.store: true`,
 * the object `policy/document.json`, which `service policy push|waive|freeze`
 * write). Both hand back the same reading (engine/config/policy-document.ts),
 * so the reloader applies or refuses a document the same way whatever its
 * source.
 *
 * The store's object is JSON (the commands write it so). It is polled like
 * the advisory artifact (SPEC.md 3.4): a conditional HEAD on the last ETag
 * first, so an unchanged object costs no body read; a valid reading of an
 * unchanged object is handed back as it was read (an invalid one is read
 * again, as a broken file is).
 */
import { Buffer } from 'node:buffer'
import { isServiceError } from '../errors.js'
import type { ObjectStore } from '../store/object-store.js'
import { parsePolicyDocument, readPolicyDocument, type PolicyReading } from './policy-document.js'

/** The store's object that holds the policy document. */
export const POLICY_OBJECT_KEY = 'policy/document.json'
/** A policy document is rules and waivers: an object larger than this is refused unread. */
export const MAX_POLICY_OBJECT_BYTES = 1024 * 1024

/** A reading, and whether the source had no document at all (the store's object does not exist). */
export type PolicySourceReading = PolicyReading & { readonly absent?: true }

export interface PolicySource {
  /** How log lines and refusals name it: the file's path, or `<store>/policy/document.json`. */
  readonly name: string
  /** The log fields that name it: `{ file }` or `{ object }`. */
  readonly fields: Readonly<Record<string, string>>
  /** Reads and validates the document at `now`; never throws. */
  read(now: number): Promise<PolicySourceReading>
}

export function filePolicySource(path: string): PolicySource {
  return { name: path, fields: { file: path }, read: (now) => readPolicyDocument(path, now) }
}

/** `name`: how the store is described (server/roles/object-store.ts), the key appended. */
export function storePolicySource(store: ObjectStore, storeName: string, key: string = POLICY_OBJECT_KEY): PolicySource {
  const name = `${storeName}${storeName.endsWith('/') ? '' : '/'}${key}`
  let last: { etag: string; reading: PolicyReading } | undefined
  return {
    name,
    fields: { object: name },
    async read(now) {
      try {
        if (last !== undefined) {
          const head = await store.head(key, { ifNoneMatch: last.etag })
          if (head?.notModified === true) return last.reading
        }
        const object = await readStoredPolicy(store, key)
        if (object === undefined) {
          last = undefined
          return { ok: false, absent: true, problems: [`the store holds no policy document at ${name}`] }
        }
        const reading = parsePolicyDocument(object.text, true, now)
        last = reading.ok ? { etag: object.etag, reading } : undefined
        return reading
      } catch (error) {
        const detail = isServiceError(error) && error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : (error as Error)?.message ?? String(error)
        return { ok: false, problems: [`cannot read ${name}: ${detail}`] }
      }
    },
  }
}

/** The stored document's text and ETag, undefined when there is none; throws when the store fails or the object is over the bound. */
export async function readStoredPolicy(store: ObjectStore, key: string = POLICY_OBJECT_KEY): Promise<{ readonly etag: string; readonly text: string } | undefined> {
  const object = await store.get(key)
  if (object === undefined) return undefined
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of object.stream) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk as Buffer
    size += bytes.byteLength
    if (size > MAX_POLICY_OBJECT_BYTES) {
      object.stream.destroy()
      throw new Error(`the object is over the ${MAX_POLICY_OBJECT_BYTES}-byte bound of a policy document`)
    }
    chunks.push(bytes)
  }
  return { etag: object.etag, text: Buffer.concat(chunks, size).toString('utf8') }
}
