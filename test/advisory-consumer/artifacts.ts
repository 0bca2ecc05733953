/**
 * Small real artifacts for the consumer tests: the lodash GHSA records of the
 * npm samples (../shared/data/osv/npm/samples), compiled in memory with
 * the compiler's own builder, and a store on a temporary folder.
 */
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ArtifactBuilder } from '../../engine/advisory/pilot/artifact-writer.js'
import type { Ecosystem } from '../../engine/advisory/artifact/database.js'
import type { OsvRecord } from '../../engine/advisory/artifact/osv-record.js'
import type { Clock } from '../../engine/clock.js'
import { FilesystemObjectStore } from '../../engine/store/filesystem-object-store.js'
import { sharedDataPath } from '../../bench/peers/shared-data.js'

const SAMPLES = sharedDataPath('osv', 'npm', 'samples')
export const LODASH_IDS = ['GHSA-29mw-wpgm-hmr9', 'GHSA-35jh-r3h4-6jhm', 'GHSA-jf85-cpcp-j695', 'GHSA-p6mc-m468-83gw'] as const

export function lodashRecords(): OsvRecord[] {
  return LODASH_IDS.map((id) => JSON.parse(readFileSync(join(SAMPLES, `${id}.json`), 'utf8')) as OsvRecord)
}

export interface ArtifactSpec {
  readonly ecosystem?: Ecosystem
  readonly epssStatus?: 'available' | 'unavailable'
  /** Distinguishes otherwise identical artifacts (the compile time is in the header). */
  readonly compiledAt?: Date
}

export function artifact(spec: ArtifactSpec = {}): Uint8Array {
  const builder = new ArtifactBuilder(spec.ecosystem ?? 'js')
  if ((spec.ecosystem ?? 'js') === 'js') for (const r of lodashRecords()) builder.add(r)
  const available = (spec.epssStatus ?? 'available') === 'available'
  return builder.build({
    compiledAt: spec.compiledAt ?? new Date('2026-01-01T00:00:00Z'),
    osvSource: '127.0.0.1:9',
    osvSourceUrl: 'http://127.0.0.1:9/osv/npm/all.zip',
    epss: available ? new Map([['CVE-2020-28500', 0.0123], ['CVE-2019-10744', 0.9]]) : undefined,
    epssStatus: available ? 'available' : 'unavailable',
    epssScoreDate: available ? new Date('2025-12-31T00:00:00Z') : undefined,
  })
}

export async function tempStore(t: { teardown(fn: () => unknown): void }, clock: Clock): Promise<{ store: FilesystemObjectStore; root: string }> {
  const root = await mkdtemp(join(tmpdir(), 'advisory-consumer-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  return { store: await FilesystemObjectStore.open({ root, clock }), root }
}
