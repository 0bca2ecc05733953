/**
 * The resolved configuration: the document and the environment merged,
 * checked, defaulted and frozen (STYLE.md rule 5). Everything after boot reads
 * this shape; secrets are BearerToken values that redact themselves.
 *
 * The shape is the document schema's (schema.ts), settled (settled.ts: every
 * key present, `undefined` where unset, everything readonly), with the
 * differences that resolution makes written here once, each as a schema:
 * - `server.baseUrl` is always set (derived from the port when unset), and
 *   `server.baseUrlConfigured` says whether it was configured;
 * - a mount carries its `key`; its public upstream exists only with a URL
 *   (configured, or the js mount's npm client's) and says where it came from;
 *   `respectTarballHost`, `integrityFloor` and `privateHidesPublic` are
 *   always set (their defaults depend on the mount or on another key);
 * - a credential has exactly its provider's fields (CREDENTIAL_SHAPES);
 * - `source` names the document that was read.
 * Secrets are typebox codecs: strings in `Static<>`, BearerToken values in
 * `StaticDecode<>`, which is what the types below are.
 */
import Type, { RemoveOptional, type Static, type StaticDecode, type TSchema } from 'typebox'
import { Defaulted, defaulted, settled } from './settled.js'
import { ConfigSchema, CredentialSchema, Literals, MOUNT_KEYS, MountSchema, PublicUpstreamSchema } from './schema.js'

const closed = { additionalProperties: false } as const

/** A key the resolved value always has, with the document's constraints. */
const present = <T extends TSchema>(type: T) => Type.Readonly(RemoveOptional(type))

/** The document once `Value.Default` has run. */
export const DefaultedConfigSchema = defaulted(ConfigSchema)
export type DefaultedDocument = Static<typeof DefaultedConfigSchema>

/** A managedRepo token's lifetime when none is asked for: an hour (CodeArtifact allows 15 minutes to 12 hours). */
export const DEFAULT_MANAGED_REPO_SECONDS = 3600

const credential = CredentialSchema.properties

/**
 * The fields each credential provider takes (SPEC.md 5.5): the document's
 * entry is one flat object, so these closed shapes are what the checks hold
 * an entry to and what a resolved entry is.
 */
export const CREDENTIAL_SHAPES = {
  registry: [
    Type.Object({ name: credential.name, provider: Type.Literal('registry'), token: RemoveOptional(credential.token) }, closed),
  ],
  selfHosted: [
    Type.Object({ name: credential.name, provider: Type.Literal('selfHosted'), file: RemoveOptional(credential.file) }, closed),
    Type.Object({ name: credential.name, provider: Type.Literal('selfHosted'), command: RemoveOptional(credential.command) }, closed),
  ],
  managedRepo: [
    Type.Object({
      name: credential.name,
      provider: Type.Literal('managedRepo'),
      domain: RemoveOptional(credential.domain),
      domainOwner: credential.domainOwner,
      region: RemoveOptional(credential.region),
      endpoint: credential.endpoint,
      durationSeconds: Defaulted(RemoveOptional(credential.durationSeconds), DEFAULT_MANAGED_REPO_SECONDS),
    }, closed),
  ],
} as const

export const CredentialConfigSchema = Type.Union([
  settled(CREDENTIAL_SHAPES.registry[0]),
  settled(CREDENTIAL_SHAPES.selfHosted[0]),
  settled(CREDENTIAL_SHAPES.selfHosted[1]),
  settled(CREDENTIAL_SHAPES.managedRepo[0]),
])

const { url: _url, respectTarballHost: _respectTarballHost, ...publicUpstream } = settled(PublicUpstreamSchema).properties

export const PublicUpstreamConfigSchema = Type.Object({
  url: present(PublicUpstreamSchema.properties.url),
  /** Where `url` came from: the document or environment, or the local npm client's configuration. */
  urlOrigin: Type.Readonly(Type.Union([Type.Literal('configured'), Type.Literal('npm-client')])),
  ...publicUpstream,
  /** The tarball-host policy of this mount's public leg: the mount's `respectTarballHost`, else the global `respectUpstreamTarballHost`. */
  respectTarballHost: present(PublicUpstreamSchema.properties.respectTarballHost),
})

const mount = settled(MountSchema).properties

export const MountConfigSchema = Type.Object({
  key: Type.Readonly(Literals(MOUNT_KEYS)),
  ...mount,
  upstreams: Type.Readonly(Type.Object({
    private: mount.upstreams.properties.private,
    public: Type.Readonly(Type.Union([PublicUpstreamConfigSchema, Type.Undefined()])),
  })),
  integrityFloor: present(MountSchema.properties.integrityFloor),
  /** py: a private project hides the public one of the same name (the dependency-confusion guard); js ignores it. */
  privateHidesPublic: present(MountSchema.properties.privateHidesPublic),
})

const resolved = settled(ConfigSchema).properties

export const ResolvedConfigSchema = Type.Object({
  ...resolved,
  server: Type.Readonly(Type.Object({
    ...resolved.server.properties,
    baseUrl: present(ConfigSchema.properties.server.properties.baseUrl),
    /** Whether `baseUrl` was configured; unset, artifact URLs follow each request's own origin (server/http/request-origin.ts). */
    baseUrlConfigured: Type.Readonly(Type.Boolean()),
  })),
  credentials: Type.Readonly(Type.Immutable(Type.Array(CredentialConfigSchema))),
  mounts: Type.Readonly(Type.Object({
    js: Type.Readonly(Type.Optional(MountConfigSchema)),
    py: Type.Readonly(Type.Optional(MountConfigSchema)),
  })),
  /** The document that was read, if any. */
  source: Type.Readonly(Type.Object({ document: Type.Readonly(Type.Union([Type.String(), Type.Undefined()])) })),
})

export type Config = StaticDecode<typeof ResolvedConfigSchema>
export type MountConfig = StaticDecode<typeof MountConfigSchema>
export type PublicUpstreamConfig = StaticDecode<typeof PublicUpstreamConfigSchema>
export type PrivateUpstreamConfig = NonNullable<MountConfig['upstreams']['private']>
/** `mounts.<m>.mirror`: py may name the target's Simple index (`simpleUrl`, default `{target}simple/`); js never has it. */
export type MirrorConfig = NonNullable<MountConfig['mirror']>
export type TargetConfig = Omit<MirrorConfig, 'simpleUrl'>
export type PublishConfig = NonNullable<MountConfig['publish']>
/** An upstream credential provider (SPEC.md 5.5); exactly the fields its provider needs. */
export type CredentialConfig = StaticDecode<typeof CredentialConfigSchema>
export type LogFormat = Config['observability']['logFormat']
export type IntegrityAlgorithm = MountConfig['integrityFloor']
