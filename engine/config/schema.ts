/**
 * The configuration schema (SPEC.md 2.11, DESIGN.md "Configuration sketch").
 *
 * Every key can come from the document (YAML or JSON) or from a `SERVICE_`
 * environment variable (engine/config/environment.ts). Objects refuse
 * unknown keys, so a misspelt key is a boot problem, never silently ignored.
 * Numeric limits use 0 for "automatic" where SPEC.md says the default is
 * derived (engine/memory/plan.ts derives them). Defaults are declared with
 * `Defaulted` (settled.ts) so that the resolved types (config.ts) see them.
 *
 * Keys named `token` are secrets (SPEC.md 5.8): they are turned into
 * BearerToken values on load and render redacted in every echo.
 */
import Type, { type Static, type TLiteral, type TSchemaOptions, type TUnion } from 'typebox'
import { RULE_SCHEMA, type RuleConfig } from '../policy/rule-schema.js'
import { BearerToken } from '../secret.js'
import { Defaulted } from './settled.js'

const closed = { additionalProperties: false } as const

const Seconds = (fallback: number, description: string) => Defaulted(Type.Number({ minimum: 0, description }), fallback)

/** A union of string literals, typed member by member (typebox reads a union's static type from a tuple). */
export const Literals = <const T extends readonly string[]>(values: T, options?: TSchemaOptions) =>
  Type.Union(values.map((value) => Type.Literal(value)), options) as unknown as TUnion<{ -readonly [K in keyof T]: TLiteral<T[K]> }>

const Url = (description: string) => Type.String({ minLength: 1, description })

/** A secret (SPEC.md 5.8): a string in the document, a BearerToken once loaded (engine/config/resolve-config.ts decodes it). */
const Secret = (description: string) => Type.Codec(Type.String({ minLength: 1, description, secret: true }))
  .Decode((value: string) => new BearerToken(value))
  .Encode((token: BearerToken) => token.reveal())

const ServerSchema = Type.Object({
  port: Defaulted(Type.Integer({ minimum: 0, maximum: 65535, description: 'port of the proxy and of every role\'s health probes' }), 4873),
  host: Defaulted(Type.String({ description: 'address the listener binds' }), '0.0.0.0'),
  baseUrl: Type.Optional(Url('{base_url}: the externally reachable base address; default http://localhost:{port}')),
  shutdownDrainTimeout: Seconds(30, 'bound of the graceful drain, seconds'),
  drainDelaySeconds: Seconds(5, 'lame-duck period after SIGTERM: /readyz 503, still accepting, every response Connection: close; counts against shutdownDrainTimeout and must stay below it; 0 = close the listener at once'),
  compatPort: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535, description: 'a second listener on node:http for HTTP/1.0, pipelining and health-check clients; unset: off' })),
  edgeTokens: Defaulted(Type.Array(Secret('an edge token clients send as Authorization: Bearer'), { description: 'edge tokens (SPEC.md 5.1), any one of them admits; a list so a rotation keeps two valid; unset or empty: no edge check' }), []),
  allowedHosts: Defaulted(Type.Array(Type.String({ minLength: 1 }), { description: 'with baseUrl unset: more names (host, or host:port) a request may address the proxy by, and its artifact URLs then name; besides the listener\'s own names on its own ports' }), []),
  trustedProxies: Defaulted(Type.Array(Type.String({ minLength: 1 }), { description: 'with baseUrl unset: addresses or CIDR ranges of the reverse proxies whose X-Forwarded-Proto and X-Forwarded-Host are read; unset or empty: none' }), []),
}, closed)

const ObservabilitySchema = Type.Object({
  logFormat: Defaulted(Type.Union([Type.Literal('json'), Type.Literal('console')]), 'json'),
  logLevel: Defaulted(Type.Union([Type.Literal('debug'), Type.Literal('info'), Type.Literal('warn'), Type.Literal('error')]), 'info'),
  telemetry: Defaulted(Type.Union([Type.Literal('on'), Type.Literal('off')]), 'off'),
}, closed)

const RuntimeSchema = Type.Object({
  cores: Type.Optional(Type.Integer({ minimum: 1, description: 'pin; unset means automatic' })),
  maxHeapBytes: Type.Optional(Type.Integer({ minimum: 1, description: 'pin; unset means automatic' })),
  coresCeiling: Defaulted(Type.Integer({ minimum: 1 }), 8),
  serveMaxInFlight: Type.Optional(Type.Integer({ minimum: 1, description: 'pin; unset means automatic' })),
  cgroupPath: Defaulted(Type.String({ minLength: 1 }), '/sys/fs/cgroup'),
}, closed)

/** The default bound of a relayed PEP 658 `.metadata` file: 16 MiB, far above the largest READMEs embedded in one. */
export const DEFAULT_MAX_CORE_METADATA_BYTES = 16 * 1024 * 1024

const LimitsSchema = Type.Object({
  maxResponseBytes: Defaulted(Type.Integer({ minimum: 0, description: '0 = automatic' }), 0),
  maxVersionCount: Defaulted(Type.Integer({ minimum: 0, description: '0 = automatic' }), 0),
  maxArtifactCount: Defaulted(Type.Integer({ minimum: 0, description: '0 = automatic' }), 0),
  maxArtifactBytes: Defaulted(Type.Integer({ minimum: 0, description: 'largest artifact the mirror accepts; 0 = automatic (512 MiB)' }), 0),
  mirrorConcurrency: Defaulted(Type.Integer({ minimum: 0, description: 'mirror jobs at once; 0 = automatic (2)' }), 0),
  mirrorRefusalTries: Defaulted(Type.Integer({ minimum: 1, maximum: 10, description: 'tries of a mirror job the target refuses (a 409 for a version it does not hold, 400, 413...; 401 and 403 pause the target instead) before it is refused and left for the dead-letter queue' }), 3),
  mirrorTargetSlowMs: Defaulted(Type.Integer({ minimum: 0, description: 'a mirror target answer slower than this halves the mirror concurrency; 0 = automatic (3 x the fastest answer of the last 5 minutes + 100 ms)' }), 0),
  maxCoreMetadataBytes: Defaulted(Type.Integer({ minimum: 1, description: 'py: largest PEP 658 .metadata file relayed, declared or counted' }), DEFAULT_MAX_CORE_METADATA_BYTES),
}, closed)

const CacheSchema = Type.Object({
  maxBytes: Defaulted(Type.Integer({ minimum: 0, description: '0 = automatic (the plan\'s cache budget)' }), 0),
  maxStaleSeconds: Defaulted(Type.Integer({ minimum: 0, maximum: 86_400, description: 'how long past its five fresh minutes a packument answer may be served while it is revalidated behind the request; 0 = a request waits for the revalidation' }), 60),
  // The shared backend (docs/cache.md): `local` keeps everything in the process, as before; `redis` shares it across a tier.
  backend: Defaulted(Literals(['local', 'redis'] as const, { description: 'local (in the process) or redis (a Valkey/Redis server every replica shares)' }), 'local'),
  url: Type.Optional(Type.String({ minLength: 1, description: 'redis:// or rediss:// URL of the shared backend, without userinfo; required when backend is redis' })),
  username: Type.Optional(Type.String({ minLength: 1, description: 'ACL user of the shared backend (AUTH username password)' })),
  password: Type.Optional(Secret('password of the shared backend')),
  timeoutMs: Defaulted(Type.Integer({ minimum: 1, maximum: 10_000, description: 'bound of one operation on the shared backend; past it the operation counts as failed' }), 100),
  sharedTtlSeconds: Defaulted(Type.Integer({ minimum: 1, description: 'time to live of a value in the shared backend' }), 86_400),
  maxValueBytes: Defaulted(Type.Integer({ minimum: 1, description: 'largest value written to the shared backend (as sent, compressed); a larger one is not shared' }), 8 * 1024 * 1024),
  keyPrefix: Defaulted(Type.String({ minLength: 1, maxLength: 64, description: 'prefix of every key in the shared backend: two tiers on one server use two prefixes' }), 'rp:'),
  collapseWaitMs: Defaulted(Type.Integer({ minimum: 0, maximum: 120_000, description: 'how long a replica waits for another replica fetching or rendering the same package before it does the work itself' }), 10_000),
  warmPath: Defaulted(Type.String({ minLength: 1, description: 'local backend: folder of the kept upstream documents, read again after a restart' }), './var/warm'),
  warmMaxBytes: Defaulted(Type.Integer({ minimum: 0, description: 'local backend: bound of the kept upstream documents on disk; 0 = none kept' }), 536_870_912),
  privateMissSeconds: Defaulted(Type.Integer({ minimum: 0, maximum: 86_400, description: 'how long a private packument miss is remembered (and a public-sourced artifact skips the private leg); 0 = the private registry is asked every time' }), 300),
}, closed)

const QueueSchema = Type.Object({
  kind: Defaulted(Type.Union([Type.Literal('embedded'), Type.Literal('sqs')]), 'embedded'),
  path: Defaulted(Type.String({ minLength: 1, description: 'embedded queue folder' }), './var/queue'),
  url: Type.Optional(Url('SQS queue URL')),
  region: Type.Optional(Type.String({ minLength: 1 })),
  endpoint: Type.Optional(Url('SQS endpoint override')),
  maxReceiveCount: Defaulted(Type.Integer({ minimum: 1, description: 'delivery budget of a mirror job' }), 5),
  enqueueBufferBytes: Defaulted(Type.Integer({ minimum: 65_536, description: 'bound of the proxy\'s enqueue buffer: mirror jobs held until the queue takes them (charged to the memory plan)' }), 8_388_608),
  enqueueMemorySeconds: Defaulted(Type.Integer({ minimum: 0, description: 'how long the proxy remembers an artifact it enqueued and adds no job for it again; 0 = no memory' }), 300),
}, closed)

const StoreSchema = Type.Object({
  kind: Defaulted(Type.Union([Type.Literal('embedded'), Type.Literal('s3')]), 'embedded'),
  path: Defaulted(Type.String({ minLength: 1, description: 'embedded store folder' }), './var/store'),
  bucket: Type.Optional(Type.String({ minLength: 1 })),
  prefix: Defaulted(Type.String(), ''),
  region: Type.Optional(Type.String({ minLength: 1 })),
  endpoint: Type.Optional(Url('S3 endpoint override (path-style)')),
}, closed)

const EcosystemSeconds = (fallback: number) => Type.Object({
  js: Seconds(fallback, 'js mount'),
  py: Seconds(fallback, 'py mount'),
}, closed)

const AdvisoriesSchema = Type.Object({
  osvExportBaseUrl: Type.Optional(Url('{base}/{Ecosystem}/all.zip')),
  epssFeedUrl: Type.Optional(Url('gzip CSV EPSS feed')),
  maxAgeSeconds: Defaulted(Type.Integer({ minimum: 0, description: '0 = derived per mount (SPEC.md 8)' }), 0),
  quietTime: Defaulted(EcosystemSeconds(604800), {}),
  epssQuietTime: Seconds(604800, 'EPSS score date quiet time'),
  pollIntervalSeconds: Defaulted(Type.Number({ exclusiveMinimum: 0, description: 'how often the proxy polls the store for a new artifact' }), 60),
  pilotIntervalSeconds: Defaulted(Type.Number({ exclusiveMinimum: 0, maximum: 86400, description: 'seconds between two Pilot runs once every mounted ecosystem is published (900 = every 15 minutes, to bring malware records in quickly)' }), 3600),
}, closed)

/** The policy document (issue 31, engine/config/policy-document.ts): rules per mount and waivers that change without a restart. */
const PolicySchema = Type.Object({
  file: Type.Optional(Type.String({ minLength: 1, description: 'policy document (YAML or JSON): rules per mount and waivers, read at boot, on SIGHUP and every pollSeconds' })),
  pollSeconds: Defaulted(Type.Integer({ minimum: 0, description: 'seconds between two reads of policy.file; 0: only at boot and on SIGHUP' }), 30),
  store: Defaulted(Type.Boolean({ description: 'read the policy document from the object store (object policy/document.json), polled every pollSeconds; exclusive with policy.file' }), false),
}, closed)

const DredgerSchema = Type.Object({
  fullWalk: Defaulted(Type.Boolean(), false),
  maxRemovalsPerCycle: Defaulted(Type.Integer({ minimum: 1, description: 'per-cycle removal cap' }), 100),
  cycleSeconds: Defaulted(Type.Integer({ minimum: 1, description: 'seconds between two Dredger candidate cycles' }), 300),
}, closed)

const PrivateUpstreamSchema = Type.Object({
  url: Url('trusted private registry base URL'),
  token: Type.Optional(Secret('bearer credential sent to the private registry')),
  credential: Type.Optional(Type.String({ minLength: 1, description: 'name of a `credentials` entry to send instead of a static token' })),
}, closed)

/**
 * Upstream credential providers (SPEC.md 3.6, 5.5), named so several
 * ecosystems can share one (minted and counted once). `registry`: a static
 * secret (`token`). `selfHosted`: a token read from `file` or printed by
 * `command` (argv, no shell), with the expiry it reports. `managedRepo`: a
 * short-lived token minted by AWS CodeArtifact's GetAuthorizationToken
 * (`domain`, `domainOwner`, `region`, `endpoint`, `durationSeconds`).
 */
export const CredentialSchema = Type.Object({
  name: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' }),
  provider: Type.Union([Type.Literal('registry'), Type.Literal('selfHosted'), Type.Literal('managedRepo')]),
  domain: Type.Optional(Type.String({ minLength: 2, description: 'managedRepo: the CodeArtifact domain' })),
  domainOwner: Type.Optional(Type.String({ pattern: '^[0-9]{12}$', description: 'managedRepo: the AWS account that owns the domain' })),
  region: Type.Optional(Type.String({ minLength: 1, description: 'managedRepo: the AWS region' })),
  endpoint: Type.Optional(Url('managedRepo: CodeArtifact endpoint override')),
  durationSeconds: Type.Optional(Type.Integer({ minimum: 900, maximum: 43200, description: 'managedRepo: token lifetime asked for; default 3600' })),
  token: Type.Optional(Secret('registry: the static token')),
  file: Type.Optional(Type.String({ minLength: 1, description: 'selfHosted: a file holding the token, re-read on demand' })),
  command: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'selfHosted: program and arguments printing the token or {token, expiresAt|expiresIn}' })),
}, closed)

export const PublicUpstreamSchema = Type.Object({
  url: Type.Optional(Url('untrusted public registry base URL (https); js default: the local npm client\'s configured registry')),
  caFile: Type.Optional(Type.String({ minLength: 1, description: 'extra trust anchor; verification is never switched off' })),
  allowHosts: Defaulted(Type.Array(Type.String({ minLength: 1 }), { description: 'host allowlist for public egress; empty: the upstream\'s own host' }), []),
  allowInternalRanges: Defaulted(Type.Array(Type.String({ minLength: 1 }), { description: 'CIDRs exempt from the internal-range block' }), []),
  respectTarballHost: Type.Optional(Type.Boolean({ description: 'this mount only: admit a public artifact URL on another host:port (still within allowHosts); unset: respectUpstreamTarballHost' })),
}, closed)

const TargetSchema = Type.Object({
  target: Url('registry base URL; py: the legacy upload endpoint (twine\'s --repository-url)'),
  token: Type.Optional(Secret('bearer credential for the target; py: sent as HTTP Basic __token__:<token>, as twine sends an API token')),
  credential: Type.Optional(Type.String({ minLength: 1, description: 'name of a `credentials` entry to send instead of a static token' })),
  simpleUrl: Type.Optional(Url('py only: the target\'s Simple index URL, read for what it holds; default {target}simple/')),
}, closed)

/** The default bound of a publish document: 64 MiB, a 48 MiB tarball in base64, far above ordinary packages. */
export const DEFAULT_PUBLISH_MAX_BODY_BYTES = 64 * 1024 * 1024

const PublishSchema = Type.Object({
  target: Url('publication target base URL'),
  token: Type.Optional(Secret('bearer credential for the publication target')),
  // An `@scope` owns every name in it; an exact unscoped name may be listed too (checked against the public upstream at publish time).
  scopes: Type.Array(Type.String({ pattern: '^(@[a-z0-9][a-z0-9._~-]*|[a-z0-9][a-z0-9._~-]*)$' }), { minItems: 1, description: '@scope entries, or exact unscoped names' }),
  maxBodyBytes: Defaulted(Type.Integer({ minimum: 1, description: 'largest publish document accepted; over it 413' }), DEFAULT_PUBLISH_MAX_BODY_BYTES),
  credential: Type.Optional(Type.String({ minLength: 1, description: 'name of a `credentials` entry to send instead of a static token' })),
}, closed)

/**
 * The shipped rule list of a mount that configures none: deny what the
 * advisory database knows to be affected (admitting, with a logged warning,
 * while no database is loaded, so a fresh install works before Pilot has run),
 * let remediations through the quarantine, and quarantine everything else for
 * seven days by its upstream publish time (SPEC.md 8: six days of maximum
 * advisory age follow from it).
 */
export const DEFAULT_RULES: readonly RuleConfig[] = Object.freeze([
  Object.freeze({ rule: 'DenyIfCve', onUnavailable: 'skip' }),
  Object.freeze({ rule: 'AllowIfRemediatesCve' }),
  Object.freeze({ rule: 'AllowIfOlderThan', seconds: 604800 }),
])

export const INTEGRITY_ALGORITHMS = ['sha512', 'sha384', 'sha256', 'sha1'] as const

/** The integrity floor of a mount that sets none: the digest its public registry publishes for every artifact. */
export const DEFAULT_INTEGRITY_FLOOR = Object.freeze({ js: 'sha512', py: 'sha256' } as const)

export const MountSchema = Type.Object({
  upstreams: Defaulted(Type.Object({
    private: Type.Optional(PrivateUpstreamSchema),
    public: Defaulted(PublicUpstreamSchema, {}),
  }, closed), {}),
  publish: Type.Optional(PublishSchema),
  mirror: Type.Optional(TargetSchema),
  // No schema default: js defaults to sha512 (what npm publishes), py to sha256 (what PyPI publishes); see DEFAULT_INTEGRITY_FLOOR.
  integrityFloor: Type.Optional(Literals(INTEGRITY_ALGORITHMS, { description: 'weakest digest a public artifact may carry; default sha512 for js, sha256 for py' })),
  privateHidesPublic: Type.Optional(Type.Boolean({ description: 'py: a project the private index has hides the public project of the same name; default true' })),
  rules: Defaulted(Type.Array(RULE_SCHEMA, { description: 'admission rules of public versions; unset: the shipped defaults; [] denies every public version' }), DEFAULT_RULES),
  // No default here: a mount exists only when configured (or by the mounts default below).
}, closed)

/** The forward proxy upstream connections leave through (docs/security.md#forward-proxy). */
const EgressSchema = Type.Object({
  proxy: Defaulted(Type.Object({
    url: Type.Optional(Url('http://host:port of the forward proxy for every upstream connection (a CONNECT tunnel); unset: https_proxy/HTTPS_PROXY for https upstreams, http_proxy/HTTP_PROXY for http ones')),
    credential: Type.Optional(Secret('user:password sent to the forward proxy as Proxy-Authorization: Basic; unset: the userinfo of the environment variable\'s URL')),
    noProxy: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { description: 'hosts (and every name under them), host:port, IP literals, CIDR ranges (matched against IP-literal hosts), or * reached without the proxy; unset: no_proxy/NO_PROXY' })),
    environment: Defaulted(Type.Boolean({ description: 'read HTTPS_PROXY, HTTP_PROXY and NO_PROXY (and their lower-case forms) where url and noProxy are unset' }), true),
  }, closed), {}),
}, closed)

export const MOUNT_KEYS = ['js', 'py'] as const
export type MountKey = (typeof MOUNT_KEYS)[number]

export const ConfigSchema = Type.Object({
  server: Defaulted(ServerSchema, {}),
  observability: Defaulted(ObservabilitySchema, {}),
  runtime: Defaulted(RuntimeSchema, {}),
  limits: Defaulted(LimitsSchema, {}),
  cache: Defaulted(CacheSchema, {}),
  queue: Defaulted(QueueSchema, {}),
  store: Defaulted(StoreSchema, {}),
  advisories: Defaulted(AdvisoriesSchema, {}),
  dredger: Defaulted(DredgerSchema, {}),
  policy: Defaulted(PolicySchema, {}),
  respectUpstreamTarballHost: Defaulted(Type.Boolean({ description: 'admit a public tarball URL on another host:port' }), false),
  egress: Defaulted(EgressSchema, {}),
  credentials: Defaulted(Type.Array(CredentialSchema, { description: 'upstream credential providers, referred to by name' }), []),
  mounts: Defaulted(Type.Object({
    js: Type.Optional(MountSchema),
    py: Type.Optional(MountSchema),
  }, { ...closed, description: 'mounts by ecosystem; default: the js mount alone' }), { js: {} }),
}, closed)

/** The document as written (every key optional). */
export type ConfigDocument = Static<typeof ConfigSchema>
