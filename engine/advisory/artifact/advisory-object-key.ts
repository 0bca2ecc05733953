/**
 * Where Pilot publishes each ecosystem's artifact in the object store and
 * where the proxy polls for it (SPEC.md 2.9). One object per ecosystem:
 * `advisories/js.osvdb` and `advisories/py.osvdb` (an S3 store prepends its
 * configured prefix). The key names the ecosystem by its mount key, the one
 * readiness and configuration use; `.osvdb` is the compiled format of
 * artifact-format.ts, not the OSV export.
 */
import type { Ecosystem } from './database.js'

export const ADVISORY_OBJECT_PREFIX = 'advisories/'

export function advisoryObjectKey(ecosystem: Ecosystem): string {
  return `${ADVISORY_OBJECT_PREFIX}${ecosystem}.osvdb`
}
