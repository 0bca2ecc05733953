/**
 * The structure limits a packument is read under (SPEC.md 2.11
 * `limits.maxVersionCount`, `limits.maxArtifactCount`), with their automatic
 * values: 0 in the configuration means automatic.
 *
 * SPEC.md 8 leaves the automatic values "not shown": the largest real
 * packuments hold a few thousand versions; 50,000 versions or artifacts is
 * absurd for any real package and still far below what the ingest ceiling
 * lets through.
 */
export const AUTOMATIC_MAX_VERSION_COUNT = 50_000
export const AUTOMATIC_MAX_ARTIFACT_COUNT = 50_000

export interface ResolvedStructureLimits {
  readonly maxVersionCount: number
  readonly maxArtifactCount: number
}

/** The configured limits with 0 resolved to the automatic values. */
export function structureLimits(limits: { readonly maxVersionCount: number; readonly maxArtifactCount: number }): ResolvedStructureLimits {
  return {
    maxVersionCount: limits.maxVersionCount === 0 ? AUTOMATIC_MAX_VERSION_COUNT : limits.maxVersionCount,
    maxArtifactCount: limits.maxArtifactCount === 0 ? AUTOMATIC_MAX_ARTIFACT_COUNT : limits.maxArtifactCount,
  }
}
