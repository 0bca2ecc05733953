/**
 * The resolved configuration: the document and the environment merged,
 * checked, defaulted and frozen (STYLE.md rule 5). Everything after boot reads
 * this shape; secrets are BearerToken values that redact themselves.
 */
import type { RuleConfig } from '../policy/rule-schema.js'
import type { BearerToken } from '../secret.js'
import type { INTEGRITY_ALGORITHMS, MountKey } from './schema.js'

export type LogFormat = 'json' | 'console'
export type IntegrityAlgorithm = (typeof INTEGRITY_ALGORITHMS)[number]

export interface PrivateUpstreamConfig {
  readonly url: string
  readonly token: BearerToken | undefined
  /** The name of a `credentials` entry sent instead of `token` (engine/upstream/credentials/). */
  readonly credential?: string
}

/** An upstream credential provider (SPEC.md 5.5); exactly the fields its provider needs. */
export type CredentialConfig =
  | { readonly name: string; readonly provider: 'registry'; readonly token: BearerToken }
  | { readonly name: string; readonly provider: 'selfHosted'; readonly file: string }
  | { readonly name: string; readonly provider: 'selfHosted'; readonly command: readonly string[] }
  | {
    readonly name: string
    readonly provider: 'managedRepo'
    readonly domain: string
    readonly domainOwner: string | undefined
    readonly region: string
    readonly endpoint: string | undefined
    readonly durationSeconds: number
  }

export interface PublicUpstreamConfig {
  readonly url: string
  /** Where `url` came from: the document or environment, or the local npm client's configuration. */
  readonly urlOrigin: 'configured' | 'npm-client'
  readonly caFile: string | undefined
  readonly allowHosts: readonly string[]
  readonly allowInternalRanges: readonly string[]
  /** The tarball-host policy of this mount's public leg: the mount's `respectTarballHost`, else the global `respectUpstreamTarballHost`. */
  readonly respectTarballHost: boolean
}

export interface TargetConfig {
  readonly target: string
  readonly token: BearerToken | undefined
  /** The name of a `credentials` entry sent instead of `token` (engine/upstream/credentials/). */
  readonly credential?: string
}

/** `mounts.<m>.mirror`. */
export interface MirrorConfig extends TargetConfig {
  /** py: the target's Simple index URL (default `{target}simple/`); js never has it. */
  readonly simpleUrl?: string
}

export interface PublishConfig extends TargetConfig {
  /** `@scope` entries and exact unscoped names (engine/publish/publish-scope.ts). */
  readonly scopes: readonly string[]
  /** Largest publish document accepted (413 above it). */
  readonly maxBodyBytes: number
  /** The name of a `credentials` entry sent instead of `token`. */
  readonly credential?: string
}

export interface MountConfig {
  readonly key: MountKey
  readonly upstreams: {
    readonly private: PrivateUpstreamConfig | undefined
    readonly public: PublicUpstreamConfig | undefined
  }
  readonly publish: PublishConfig | undefined
  readonly mirror: MirrorConfig | undefined
  readonly integrityFloor: IntegrityAlgorithm
  /** py: a private project hides the public one of the same name (the dependency-confusion guard); js ignores it. */
  readonly privateHidesPublic: boolean
  readonly rules: readonly RuleConfig[]
}

export interface Config {
  readonly server: {
    readonly port: number
    readonly host: string
    readonly baseUrl: string
    readonly shutdownDrainTimeout: number
    /** The lame-duck period after SIGTERM, seconds, inside `shutdownDrainTimeout` (server/lifecycle/shutdown.ts). */
    readonly drainDelaySeconds: number
    /** The compatibility listener's port (server/http/compat-listener.ts); undefined: off. */
    readonly compatPort?: number
    /** Edge tokens (SPEC.md 5.1, server/http/edge-auth.ts); empty: no edge check. */
    readonly edgeTokens: readonly BearerToken[]
  }
  readonly observability: {
    readonly logFormat: LogFormat
    readonly logLevel: 'debug' | 'info' | 'warn' | 'error'
    readonly telemetry: 'on' | 'off'
  }
  readonly runtime: {
    readonly cores: number | undefined
    readonly maxHeapBytes: number | undefined
    readonly coresCeiling: number
    readonly serveMaxInFlight: number | undefined
    readonly cgroupPath: string
  }
  readonly limits: {
    readonly maxResponseBytes: number
    readonly maxVersionCount: number
    readonly maxArtifactCount: number
    readonly maxArtifactBytes: number
    readonly mirrorConcurrency: number
  }
  readonly cache: { readonly maxBytes: number; readonly maxStaleSeconds: number }
  readonly queue: {
    readonly kind: 'embedded' | 'sqs'
    readonly path: string
    readonly url: string | undefined
    readonly region: string | undefined
    readonly endpoint: string | undefined
    readonly maxReceiveCount: number
  }
  readonly store: {
    readonly kind: 'embedded' | 's3'
    readonly path: string
    readonly bucket: string | undefined
    readonly prefix: string
    readonly region: string | undefined
    readonly endpoint: string | undefined
  }
  readonly advisories: {
    readonly osvExportBaseUrl: string | undefined
    readonly epssFeedUrl: string | undefined
    readonly maxAgeSeconds: number
    readonly quietTime: { readonly js: number; readonly py: number }
    readonly epssQuietTime: number
    readonly pollIntervalSeconds: number
  }
  readonly dredger: { readonly fullWalk: boolean; readonly maxRemovalsPerCycle: number; readonly cycleSeconds: number }
  readonly respectUpstreamTarballHost: boolean
  /** Upstream credential providers by name (SPEC.md 5.5). */
  readonly credentials: readonly CredentialConfig[]
  readonly mounts: Readonly<Partial<Record<MountKey, MountConfig>>>
  /** The document that was read, if any. */
  readonly source: { readonly document: string | undefined }
}
