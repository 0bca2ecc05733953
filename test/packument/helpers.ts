/** Shared helpers of the packument tests: fixtures, chunking, decisions. */
import { readFileSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import type { Decision, VersionFacts } from '../../engine/policy/decision.js'
import { decision } from '../helpers/decisions.js'

export { decision }
import { sharedDataPath } from '../../bench/peers/shared-data.js'

export const PACKUMENT_DIR = sharedDataPath('npm-packuments', 'raw')

/** The real packuments of ../shared/data (README section 3), by package name. */
export const REAL_PACKUMENTS: ReadonlyArray<{ readonly name: string; readonly file: string }> = [
  { name: 'left-pad', file: 'left-pad.json' },
  { name: 'lodash', file: 'lodash.json' },
  { name: 'express', file: 'express.json' },
  { name: 'react', file: 'react.json.gz' },
  { name: '@types/node', file: 'types__node.json.gz' },
  { name: 'typescript', file: 'typescript.json.gz' },
]

export function readPackument(file: string): Buffer {
  const raw = readFileSync(`${PACKUMENT_DIR}/${file}`)
  return file.endsWith('.gz') ? gunzipSync(raw) : raw
}

export function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text)
}

/** Splits bytes into chunks of `size`. */
export function chunked(bytes: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = []
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size))
  return out
}


export const admitAll = (): Decision => decision('admit')

/** Admits versions for which `keep` is true, denies the others. */
export function admitWhen(keep: (facts: VersionFacts) => boolean): (facts: VersionFacts) => Decision {
  return (facts) => decision(keep(facts) ? 'admit' : 'deny')
}

/** A version manifest as registries write it. */
export function manifest(name: string, version: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const file = `${name.startsWith('@') ? name.slice(name.indexOf('/') + 1) : name}-${version}.tgz`
  return {
    name,
    version,
    description: 'a package',
    scripts: { test: 'tap' },
    dist: {
      integrity: `sha512-${Buffer.from(`${name}@${version}`).toString('base64')}==`,
      shasum: '0123456789abcdef0123456789abcdef01234567',
      tarball: `https://upstream.test/${name}/-/${file}`,
    },
    ...extra,
  }
}

/** A packument with the given versions, each published a day after the previous. */
export function packument(name: string, versions: readonly string[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  const time: Record<string, string> = { created: '2020-01-01T00:00:00.000Z', modified: '2021-01-01T00:00:00.000Z' }
  versions.forEach((v, k) => { time[v] = new Date(Date.UTC(2020, 0, 2 + k)).toISOString() })
  return {
    _id: name,
    name,
    'dist-tags': { latest: versions[versions.length - 1] },
    versions: Object.fromEntries(versions.map((v) => [v, manifest(name, v)])),
    time,
    readme: 'hello',
    ...extra,
  }
}

/**
 * Asserts that `fn` throws a ServiceError with `code` (and `data` fields).
 * ServiceError is frozen, which tap's t.throws cannot handle, so this checks by hand.
 */
export function expectCode(
  t: { ok(value: unknown, message: string): unknown; fail(message: string): unknown },
  fn: () => unknown,
  code: string,
  message: string,
  data: Readonly<Record<string, unknown>> = {},
): void {
  try {
    fn()
  } catch (error) {
    const e = error as { code?: unknown; data?: Record<string, unknown> }
    const dataOk = Object.entries(data).every(([k, v]) => e.data?.[k] === v)
    t.ok(e.code === code && dataOk, `${message} (${String(e.code)})`)
    return
  }
  t.fail(`${message}: nothing thrown`)
}
