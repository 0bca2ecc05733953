/**
 * One table of error codes, each with the HTTP status it maps to (SPEC.md 7.1)
 * and a default message. Errors are values: construct once, never mutate.
 * Tests assert on `code` and `instanceof ServiceError`, not on message text.
 *
 * Add a code here, in the table, when a new failure needs its own status or
 * needs to be told apart by a caller; otherwise reuse the nearest one.
 */

interface ErrorSpec {
  /** HTTP status the front door answers with. */
  readonly status: number
  /** Default human-facing text; the envelope's `error` field. */
  readonly message: string
  /** Seconds for `Retry-After`; present on every retryable 503 (SPEC.md 7.1). */
  readonly retryAfter?: number
}

export const ERROR_TABLE = {
  // Boot and lifecycle (exit code 2, SPEC.md 7.2). Status is irrelevant there.
  CONFIG_INVALID: { status: 500, message: 'the configuration was refused' },
  ROLE_UNAVAILABLE: { status: 500, message: 'a role this build cannot run' },
  BOOT_UNBUILDABLE: { status: 500, message: 'something the configuration names cannot be built in the live environment' },

  // Routing (SPEC.md 4.1).
  NOT_FOUND: { status: 404, message: 'not found' },
  UNSUPPORTED: { status: 501, message: 'unsupported by design' },
  BAD_PACKAGE_NAME: { status: 404, message: 'not a valid package name' },
  BAD_ARTIFACT_NAME: { status: 404, message: 'not a valid artifact file name' },
  NOT_ACCEPTABLE: { status: 406, message: 'no representation the request accepts' },
  REQUEST_FRAMING_AMBIGUOUS: { status: 400, message: 'the request body framing is ambiguous' },
  REQUEST_CODING_UNSUPPORTED: { status: 501, message: 'the request uses a transfer coding other than chunked' },
  HOST_NOT_ALLOWED: { status: 400, message: 'the request names a host this proxy does not answer as; set server.baseUrl, or list the name in server.allowedHosts' },

  // Upstreams (SPEC.md 4.2, 4.4).
  UPSTREAM_MISS: { status: 404, message: 'no such package upstream' },
  UPSTREAM_WRONG_PACKAGE: { status: 502, message: 'an upstream answered with a document for another package' },
  UPSTREAM_LOOP: { status: 502, message: 'the upstream is this proxy itself' },
  UPSTREAM_UNAVAILABLE: { status: 503, message: 'an upstream is temporarily unavailable', retryAfter: 5 },
  UPSTREAM_TIMEOUT: { status: 503, message: 'an upstream did not answer in time', retryAfter: 5 },
  UPSTREAM_REFUSED: { status: 500, message: 'an upstream refused the request' },
  UPSTREAM_DECODE: { status: 503, message: 'an upstream sent a malformed body', retryAfter: 5 },
  UPSTREAM_REDIRECT: { status: 500, message: 'an upstream answered with a redirect, which is never followed' },
  RESPONSE_TOO_LARGE: { status: 500, message: 'the upstream document exceeds the metadata ingest ceiling' },
  STRUCTURE_LIMIT: { status: 500, message: 'the upstream document exceeds a structural limit' },
  EGRESS_REFUSED: { status: 403, message: 'the upstream address is refused by the egress policy' },
  // A deployment's resolver answering an allowed host with a reserved address: a configuration problem, not a verdict.
  EGRESS_ADDRESS_INTERNAL: { status: 502, message: 'the upstream host resolves to an address in an internal range, which the egress policy refuses' },
  TARBALL_HOST_REFUSED: { status: 403, message: 'the tarball URL names a host the tarball-host policy refuses' },
  // The forward proxy upstream connections leave through (docs/security.md#forward-proxy): a fault of the way out, not of the package.
  EGRESS_PROXY_UNREACHABLE: { status: 502, message: 'the forward proxy cannot be reached' },
  EGRESS_PROXY_REFUSED: { status: 502, message: 'the forward proxy refused the tunnel to the upstream' },
  EGRESS_PROXY_TIMEOUT: { status: 504, message: 'the forward proxy did not open the tunnel in time' },

  // Policy and advisory data (SPEC.md 3.3, 3.5, 4.2).
  POLICY_WITHHELD: { status: 403, message: 'withheld by policy' },
  ADVISORY_UNAVAILABLE: { status: 503, message: 'the advisory database is not available', retryAfter: 30 },
  ADVISORY_EXPIRED: { status: 503, message: 'the advisory database is older than its maximum age', retryAfter: 60 },
  ADVISORY_ARTIFACT_INVALID: { status: 500, message: 'the advisory artifact is invalid' },
  INTEGRITY_MISSING: { status: 403, message: 'the version has no integrity digest' },
  INTEGRITY_BELOW_FLOOR: { status: 403, message: 'the version integrity digest is below the configured floor' },

  // Memory admission (SPEC.md 8.1).
  GATE_SHED: { status: 503, message: 'the service is busy; retry shortly', retryAfter: 1 },
  GATE_PAUSE_TIMEOUT: { status: 503, message: 'the request waited too long for memory', retryAfter: 1 },
  WORKER_OUT_OF_MEMORY: { status: 503, message: 'the request ran out of memory in a worker', retryAfter: 1 },

  // Publish (SPEC.md 4.3, 7.1): engine/publish/, server/routes/publish-route.ts.
  PUBLISH_NOT_CONFIGURED: { status: 405, message: 'publishing is not configured' },
  PUBLISH_OUTSIDE_SCOPES: { status: 403, message: 'the package name is outside the configured publish scopes' },
  PUBLISH_NAME_MISMATCH: { status: 403, message: 'the publish document names another package than the route' },
  PUBLISH_SHADOWS_PUBLIC: { status: 403, message: 'the public upstream has a package of this name; a publish would shadow it' },
  PUBLISH_PUBLIC_UNAVAILABLE: { status: 503, message: 'the public upstream could not be asked whether it has this name; retry later', retryAfter: 30 },
  PUBLISH_BODY_TOO_LARGE: { status: 413, message: 'the publish document exceeds mounts.<ecosystem>.publish.maxBodyBytes' },
  PUBLISH_DOCUMENT_INVALID: { status: 400, message: 'the publish document is malformed' },
  PUBLISH_METADATA_CHANGE: { status: 501, message: 'only publishes of new versions are relayed; deprecate, unpublish and other metadata changes are made at the publication target' },
  PUBLISH_TARGET_UNAVAILABLE: { status: 503, message: 'the publication target is temporarily unavailable', retryAfter: 5 },

  // npm audit (issue 17 item 3): engine/npm/bulk-advisory.ts, server/routes/audit-route.ts.
  AUDIT_REQUEST_INVALID: { status: 400, message: 'the audit request is malformed: expected a JSON object of package names to arrays of version strings' },
  AUDIT_BODY_TOO_LARGE: { status: 413, message: 'the audit request exceeds its size bound' },
  AUDIT_LEGACY_ENDPOINT: { status: 501, message: 'this registry answers npm audit only through /-/npm/v1/security/advisories/bulk, which npm 7 and later use: upgrade npm' },

  // Upstream credentials (SPEC.md 3.6, 5.5): engine/upstream/credentials/.
  CREDENTIAL_BREAKER_OPEN: { status: 503, message: 'an upstream credential cannot be minted now (the credential breaker is open)', retryAfter: 60 },
  CREDENTIAL_MINT_FAILED: { status: 503, message: 'an upstream credential could not be minted', retryAfter: 5 },

  // Edge authentication (SPEC.md 5.1): server/http/edge-auth.ts.
  EDGE_UNAUTHORIZED: { status: 401, message: 'a valid edge token is required (Authorization: Bearer)' },

  // Mirror worker (SPEC.md 3.7, 6.1): a job that cannot succeed.
  MIRROR_ARTIFACT_TOO_LARGE: { status: 500, message: 'the artifact exceeds limits.maxArtifactBytes' },
  MIRROR_INTEGRITY_MISMATCH: { status: 500, message: 'the artifact bytes do not match the job\'s integrity digest' },

  // Durable infrastructure.
  QUEUE_FAILURE: { status: 500, message: 'the queue operation failed' },
  STORE_FAILURE: { status: 500, message: 'the object store operation failed' },
  /** Absorbed where it happens (SPEC.md 6.3: the request goes to the origin, the write is skipped); never a client's answer. */
  CACHE_BACKEND_FAILED: { status: 500, message: 'the shared cache backend operation failed' },

  INTERNAL: { status: 500, message: 'internal error' },
} as const satisfies Record<string, ErrorSpec>

export type ErrorCode = keyof typeof ERROR_TABLE

export interface ServiceErrorOptions {
  message?: string
  cause?: unknown
  /** Structured detail safe to log (never a body, credential or URL query). */
  data?: Readonly<Record<string, unknown>>
  /** Overrides the table's `Retry-After` (seconds). */
  retryAfter?: number
}

export class ServiceError extends Error {
  readonly code: ErrorCode
  readonly status: number
  readonly retryAfter: number | undefined
  readonly data: Readonly<Record<string, unknown>> | undefined

  constructor(code: ErrorCode, options: ServiceErrorOptions = {}) {
    const spec: ErrorSpec = ERROR_TABLE[code]
    super(options.message ?? spec.message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.status = spec.status
    this.retryAfter = options.retryAfter ?? spec.retryAfter
    this.data = options.data === undefined ? undefined : Object.freeze({ ...options.data })
  }
}

// On the prototype, not the instance, so tooling that redefines `name` (tap's t.throws) works.
Object.defineProperty(ServiceError.prototype, 'name', { value: 'ServiceError', enumerable: false })

export function isServiceError(value: unknown, code?: ErrorCode): value is ServiceError {
  return value instanceof ServiceError && (code === undefined || value.code === code)
}

/**
 * The refusal of an advisory push at or past its maximum age (SPEC.md 3.5;
 * 7.1: "the message states the age and the maximum"), in one wording
 * wherever it is refused: a listing nothing survived, an artifact, an audit.
 * Ages are seconds; a push with no publication time is expired outright and
 * says so.
 */
export function advisoryExpired(ageSeconds: number | undefined, maxAgeSeconds: number | undefined): ServiceError {
  const detail: string[] = []
  if (ageSeconds !== undefined) detail.push(`age ${Math.floor(ageSeconds)} s`)
  else if (maxAgeSeconds !== undefined) detail.push('its publication time is unknown')
  if (maxAgeSeconds !== undefined) detail.push(`maximum ${Math.floor(maxAgeSeconds)} s`)
  return new ServiceError('ADVISORY_EXPIRED', {
    ...(detail.length === 0 ? {} : { message: `${ERROR_TABLE.ADVISORY_EXPIRED.message}: ${detail.join(', ')}` }),
    data: {
      ...(ageSeconds === undefined ? {} : { ageSeconds }),
      ...(maxAgeSeconds === undefined ? {} : { maxAgeSeconds }),
    },
  })
}

/** Wraps anything thrown into a ServiceError, keeping coded ones as they are. */
export function toServiceError(value: unknown, fallback: ErrorCode = 'INTERNAL'): ServiceError {
  return value instanceof ServiceError ? value : new ServiceError(fallback, { cause: value })
}

/**
 * The configuration loader's own refusal wordings (engine/config/load.ts,
 * environment.ts, url-rules.ts): each is the message of one problem in the
 * boot report (SPEC.md 7.2). `service check-config` and every role's boot
 * print the same report because both read the configuration through that one
 * loader, so a refusal belongs there, never in a role's start. Messages about
 * a type or a range come from the schema compiler.
 *
 * No wording may echo a credential: a value that may carry one is passed in
 * already redacted (url-rules.ts `redactUnparsedUrl`, `credentialFreeUrl`).
 */
export const CONFIG_REFUSAL = {
  unreadableDocument: (reason: string) => `cannot read the configuration document: ${reason}`,
  unparsableDocument: (where: string) => `cannot parse the configuration document: ${where}`,
  documentNotMapping: 'the configuration document must be a mapping',
  unknownKey: 'unknown key',
  unknownRuleKey: (kind: string) => `unknown rule key for ${kind}`,
  unknownRuleKind: (kind: unknown, known: readonly string[]) => `unknown rule kind ${JSON.stringify(kind)}; known: ${known.join(', ')}`,
  notOneOf: (allowed: string) => `must be one of ${allowed}`,
  envNotJson: 'must be JSON text (an array or object)',
  envNotNumber: (raw: string) => `must be a number, got ${JSON.stringify(raw)}`,
  envNotBoolean: (raw: string) => `must be a boolean (true/false), got ${JSON.stringify(raw)}`,
  notUrl: (redacted: string) => `not a valid absolute URL: ${JSON.stringify(redacted)}`,
  notHttpUrl: (redacted: string) => `must be an http or https URL, got ${JSON.stringify(redacted)}`,
  notRedisUrl: (redacted: string) => `must be a redis:// or rediss:// URL, got ${JSON.stringify(redacted)}`,
  urlUserinfo: 'must not carry userinfo (a credential in the URL); use the secret setting instead',
  urlCredentialQuery: (parameter: string) => `must not carry a credential in the query (parameter ${JSON.stringify(parameter)}); use the secret setting instead`,
  urlNotHttps: 'must be https: public egress is https only, with certificate validation',
  upstreamQueryOrFragment: 'must not carry a query or fragment: it is the base that package paths are appended to',
  upstreamIsThisProxy: (credentialFree: string) => `${credentialFree} is this proxy itself (its own origin); point it at a real registry`,
  npmRegistryUnset: 'not set, and the local npm client has no registry configured to default to',
  requiredForSqs: 'required when queue.kind is sqs',
  requiredForS3: 'required when store.kind is s3',
  requiredForRedis: 'required when cache.backend is redis',
  policySourcesExclusive: 'policy.store and policy.file are exclusive: the policy document is read from one source, the store or the file',
  storePrefixUnusable: (reason: string) => `not a usable object key prefix: ${reason}`,
  notCidr: (value: string) => `not a CIDR range: ${JSON.stringify(value)}`,
  credentialRegistryShape: 'a registry credential takes a token and nothing else',
  credentialManagedRepoShape: 'a managedRepo credential needs domain and region (domainOwner, endpoint and durationSeconds are optional) and takes no token, file or command',
  credentialManagedFieldsElsewhere: 'domain, domainOwner, region, endpoint and durationSeconds belong to a managedRepo credential only',
  credentialSelfHostedShape: 'a selfHosted credential takes exactly one of file or command, and no token',
  credentialDuplicate: (name: string) => `credential ${JSON.stringify(name)} is defined twice`,
  credentialUnknown: (name: string) => `names no entry of credentials: ${JSON.stringify(name)}`,
  credentialWithToken: 'set token or credential, not both',
  pyPublishNotBuilt: 'this build relays no py publishes (upload to your private index directly); remove the key',
  publishNeedsEdgeTokens: 'the publish relay writes with its own target credential, so it needs server.edgeTokens to say who may publish: without them anyone who reaches the proxy could publish into your scopes; set server.edgeTokens (SERVICE_SERVER__EDGE_TOKENS)',
  pyOnlyKey: 'only the py mount reads this key',
  notHostName: (value: string) => `not a host name or address, with an optional :port: ${JSON.stringify(value)}`,
  drainDelayNotBelowDrainTimeout: (delay: number, timeout: number) => `${delay} s is not below server.shutdownDrainTimeout (${timeout} s): the lame-duck period counts against the drain bound, so nothing would be left for requests in flight to finish; lower server.drainDelaySeconds (SERVICE_SERVER__DRAIN_DELAY_SECONDS, 0 turns the period off) or raise server.shutdownDrainTimeout`,
} as const
