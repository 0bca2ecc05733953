/**
 * The member names the scanner acts on inside a manifest, its `dist`, its
 * `scripts`, `_npmUser` and `dist.attestations`, recognized from their raw bytes without decoding a string:
 * these objects hold most of a packument's keys (tens per version), and all
 * that matters about any other key is that it is not one of these.
 */
import { ABBREVIATED_MANIFEST_FIELDS, INSTALL_SCRIPTS } from './abbreviated-fields.js'

/** Id of a key that is none of the known ones. */
export const UNKNOWN_KEY = 0

const NAMES: readonly string[] = [
  '', // UNKNOWN_KEY
  ...ABBREVIATED_MANIFEST_FIELDS,
  'bundledDependencies',
  'scripts',
  'tarball',
  'integrity',
  'shasum',
  ...INSTALL_SCRIPTS,
  // Publishing trust (DenyIfTrustDowngrade): `_npmUser.trustedPublisher`, `dist.attestations.provenance`.
  '_npmUser',
  'trustedPublisher',
  'attestations',
  'provenance',
]

const IDS: ReadonlyMap<string, number> = new Map(NAMES.map((name, id) => [name, id]))

function idOf(name: string): number {
  const id = IDS.get(name)
  if (id === undefined || id === UNKNOWN_KEY) throw new Error(`not a known key: ${name}`)
  return id
}

export const KEY_DIST = idOf('dist')
export const KEY_NAME = idOf('name')
export const KEY_VERSION = idOf('version')
export const KEY_SCRIPTS = idOf('scripts')
export const KEY_TARBALL = idOf('tarball')
export const KEY_INTEGRITY = idOf('integrity')
export const KEY_SHASUM = idOf('shasum')
export const KEY_HAS_INSTALL_SCRIPT = idOf('hasInstallScript')
export const KEY_NPM_USER = idOf('_npmUser')
export const KEY_TRUSTED_PUBLISHER = idOf('trustedPublisher')
export const KEY_ATTESTATIONS = idOf('attestations')
export const KEY_PROVENANCE = idOf('provenance')
// Dependency lists (DenyIfDependencyAdded), among the abbreviated form's fields.
export const KEY_DEPENDENCIES = idOf('dependencies')
export const KEY_OPTIONAL_DEPENDENCIES = idOf('optionalDependencies')
export const KEY_PEER_DEPENDENCIES = idOf('peerDependencies')

// What the abbreviated form does with a manifest member, by key id.
export const K_DROP = 0
export const K_KEEP = 1
export const K_BUNDLED = 2 // `bundledDependencies`
export const K_HAS_INSTALL_SCRIPT = 3
export const K_BUNDLE_DEPENDENCIES = 4

/** The K_* code of each key id, as a manifest member. */
export const MANIFEST_CODES: Uint8Array = Uint8Array.from(NAMES, (name) => {
  if (name === 'hasInstallScript') return K_HAS_INSTALL_SCRIPT
  if (name === 'bundleDependencies') return K_BUNDLE_DEPENDENCIES
  if (ABBREVIATED_MANIFEST_FIELDS.has(name)) return K_KEEP
  return name === 'bundledDependencies' ? K_BUNDLED : K_DROP
})

/**
 * For the ids of the scripts that make npm's minifier set `hasInstallScript`,
 * a bit of their own (1, 2, 4); 0 for any other id. A repeated script key
 * is judged by its last value, as JSON.parse keeps it, so each needs its bit.
 */
export const INSTALL_SCRIPT_KEYS: Uint8Array = (() => {
  const bits = new Uint8Array(NAMES.length)
  let bit = 1
  NAMES.forEach((name, id) => {
    if (!INSTALL_SCRIPTS.has(name)) return
    bits[id] = bit
    bit <<= 1
  })
  return bits
})()

/** Longest known name, bytes: anything longer is unknown at once. */
const MAX_LENGTH = 31

/** Candidates by length and first byte, each as its bytes and id. */
const BUCKETS: Array<Array<{ readonly bytes: Uint8Array; readonly id: number }> | undefined> = []
for (let id = 1; id < NAMES.length; id++) {
  const bytes = new TextEncoder().encode(NAMES[id])
  if (bytes.length > MAX_LENGTH) throw new Error(`known key too long: ${NAMES[id]}`)
  const slot = bytes.length * 128 + bytes[0]!
  ;(BUCKETS[slot] ??= []).push({ bytes, id })
}

/** The id of the key whose unescaped bytes are buf[from, to). */
export function knownKeyId(buf: Uint8Array, from: number, to: number): number {
  const length = to - from
  if (length > MAX_LENGTH || length === 0) return UNKNOWN_KEY
  const first = buf[from]!
  if (first >= 128) return UNKNOWN_KEY
  const bucket = BUCKETS[length * 128 + first]
  if (bucket === undefined) return UNKNOWN_KEY
  for (const { bytes, id } of bucket) {
    let p = 1
    while (p < length && bytes[p] === buf[from + p]) p++
    if (p === length) return id
  }
  return UNKNOWN_KEY
}

/** The id of a decoded key. */
export function knownKeyIdOf(key: string): number {
  return IDS.get(key) ?? UNKNOWN_KEY
}
