/**
 * Loads the configuration once at boot: the document (`--config FILE` or
 * `SERVICE_CONFIG`, YAML or JSON), overlaid by `SERVICE_` environment
 * variables (environment wins, SPEC.md 2.11), checked against the schema and
 * the rules no schema can state (URLs without credentials, an upstream that
 * is this proxy), defaulted, and frozen. Every problem is collected so the
 * boot report names them all at once (SPEC.md 7.2).
 *
 * Removing a document pin cannot restore an automatic value while an
 * environment pin remains: the overlay is applied on every load, after the
 * document, so an environment value always decides its key.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { Compile } from 'typebox/compile'
import Value from 'typebox/value'
import YAML, { YAMLError } from 'yaml'
import { RULE_KINDS, type RuleKind } from '../policy/decision.js'
import { npmOnlyProblem } from '../policy/evaluator.js'
import { selectorProblem } from '../policy/package-selector.js'
import { RULE_SCHEMAS } from '../policy/rule-schema.js'
import { BearerToken } from '../secret.js'
import type { Config, CredentialConfig, MountConfig, PublicUpstreamConfig } from './config.js'
import { readEnvironment } from './environment.js'
import type { ConfigProblem } from './problems.js'
import { ConfigSchema, DEFAULT_INTEGRITY_FLOOR, MOUNT_KEYS, type MountKey } from './schema.js'
import { CONFIG_REFUSAL } from '../errors.js'
import { checkObjectPrefix } from '../store/object-key.js'
import { isCidr } from './cidr.js'
import { credentialFreeUrl, urlProblem, type UrlRuleOptions } from './url-rules.js'

export interface LoadOptions {
  /** `--config FILE` from the command line; wins over `SERVICE_CONFIG`. */
  readonly configPath?: string | undefined
  readonly env: NodeJS.ProcessEnv
  /**
   * The local npm client's configured registry, used for the js mount's
   * public upstream when none is configured (DESIGN.md: no public registry
   * host is written into the code). Injected so tests never run npm.
   */
  readonly npmRegistry?: () => string | undefined
}

export type LoadResult =
  | { readonly ok: true; readonly config: Config }
  | { readonly ok: false; readonly problems: readonly ConfigProblem[] }

const validator = Compile(ConfigSchema)
const ruleValidators = new Map(RULE_KINDS.map((kind) => [kind, Compile(RULE_SCHEMAS[kind])]))

export function loadConfig(options: LoadOptions): LoadResult {
  const problems: ConfigProblem[] = []
  const documentPath = options.configPath ?? nonEmpty(options.env['SERVICE_CONFIG'])
  const documentSource = documentPath === undefined ? 'defaults' : `document ${documentPath}`

  let document: Record<string, unknown> = {}
  if (documentPath !== undefined) {
    const read = readDocument(resolve(documentPath))
    if (read.ok) document = read.value
    else problems.push({ path: '', message: read.message, source: documentSource })
  }

  const overlay = readEnvironment(ConfigSchema, options.env)
  problems.push(...overlay.problems)
  const merged = deepMerge(document, overlay.values)
  const sourceOf = (path: string): string => {
    for (const [key, variable] of overlay.origins) {
      if (path === key || path.startsWith(`${key}.`)) return `environment ${variable}`
    }
    return documentSource
  }

  problems.push(...schemaProblems(merged, sourceOf))
  problems.push(...urlProblems(merged, sourceOf))
  problems.push(...buildProblems(merged, sourceOf))
  if (problems.length > 0) return { ok: false, problems }

  const withDefaults = Value.Default(ConfigSchema, structuredClone(merged)) as Defaulted
  const config = resolveConfig(withDefaults, documentPath, options, problems, sourceOf)
  if (problems.length > 0 || config === undefined) return { ok: false, problems }
  return { ok: true, config: deepFreeze(config) }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value
}

function readDocument(path: string): { ok: true; value: Record<string, unknown> } | { ok: false; message: string } {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    return { ok: false, message: CONFIG_REFUSAL.unreadableDocument((error as Error).message) }
  }
  let value: unknown
  try {
    // YAML 1.2 is a superset of JSON, so one parser reads both; JSON errors stay precise.
    value = path.endsWith('.json') ? JSON.parse(text) : YAML.parse(text, { uniqueKeys: true, prettyErrors: false })
  } catch (error) {
    return { ok: false, message: CONFIG_REFUSAL.unparsableDocument(syntaxProblem(error, text, path.endsWith('.json'))) }
  }
  if (value === null || value === undefined) return { ok: true, value: {} }
  if (typeof value !== 'object' || Array.isArray(value)) return { ok: false, message: CONFIG_REFUSAL.documentNotMapping }
  return { ok: true, value: value as Record<string, unknown> }
}

/**
 * A syntax error located by line and column, without the document's text:
 * yaml's pretty errors quote the offending line and V8's JSON errors a
 * snippet around it, and that line may be a URL with its credential.
 */
function syntaxProblem(error: unknown, text: string, json: boolean): string {
  const message = error instanceof Error ? error.message : String(error)
  if (error instanceof YAMLError) return `${message.split('\n')[0] as string} at ${lineColumn(text, error.pos[0])}`
  // yaml's other throws (an unresolved alias) name a YAML identifier at most.
  if (!json) return message.split('\n')[0] as string
  // V8's fixed wording, then the offset: `Expected ',' or '}' after property value in JSON at position 30`.
  const located = /^([A-Za-z ',{}[\]:]*?) in JSON at position (\d+)/.exec(message)
  if (located !== null) return `${located[1]} at ${lineColumn(text, Number(located[2]))}`
  if (message === 'Unexpected end of JSON input') return message
  // `Unexpected token 'h', "{"url": https://u:"... is not valid JSON` quotes the document: say less.
  return 'not valid JSON (the offending text is not echoed)'
}

function lineColumn(text: string, offset: number): string {
  const before = text.slice(0, Math.max(0, offset))
  const line = before.split('\n').length
  return `line ${line}, column ${offset - before.lastIndexOf('\n')}`
}

function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base }
  for (const [key, value] of Object.entries(over)) {
    const current = out[key]
    out[key] = isPlainObject(current) && isPlainObject(value) ? deepMerge(current, value) : value
  }
  return out
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

const RULES_PATH = /^\/mounts\/(js|py)\/rules\/(\d+)(\/|$)/

function schemaProblems(value: unknown, sourceOf: (path: string) => string): ConfigProblem[] {
  const problems: ConfigProblem[] = []
  const seen = new Set<string>()
  const add = (pointer: string, message: string): void => {
    const path = pointer.split('/').filter((s) => s.length > 0).join('.')
    const key = `${path}\u0000${message}`
    if (seen.has(key)) return
    seen.add(key)
    problems.push({ path, message, source: sourceOf(path) })
  }
  if (validator.Check(value)) return problems
  const ruleLists = new Set<string>()
  for (const error of validator.Errors(value)) {
    const rules = RULES_PATH.exec(error.instancePath)
    if (rules !== null) {
      // The rule union's errors name every branch; check the entry against the
      // one schema its `rule` names instead (below), for one precise report.
      ruleLists.add(rules[1] as string)
      continue
    }
    if (error.keyword === 'boolean') continue // duplicate of the additionalProperties report
    if (error.keyword === 'additionalProperties') {
      const extra = (error.params as { additionalProperties?: string[] }).additionalProperties ?? []
      for (const key of extra) add(`${error.instancePath}/${key}`, CONFIG_REFUSAL.unknownKey)
      continue
    }
    if (error.keyword === 'anyOf' || error.keyword === 'const') {
      add(error.instancePath, CONFIG_REFUSAL.notOneOf(allowedValues(error.schemaPath)))
      continue
    }
    add(error.instancePath, error.message)
  }
  const mounts = (value as { mounts?: Record<string, { rules?: unknown }> }).mounts ?? {}
  for (const mount of ruleLists) {
    const rules = mounts[mount]?.rules
    if (!Array.isArray(rules)) continue
    rules.forEach((rule: unknown, index) => {
      const base = `/mounts/${mount}/rules/${index}`
      const kind = isPlainObject(rule) ? rule['rule'] : undefined
      if (typeof kind !== 'string' || !RULE_KINDS.includes(kind as RuleKind)) {
        add(`${base}/rule`, CONFIG_REFUSAL.unknownRuleKind(kind, RULE_KINDS))
        return
      }
      const check = ruleValidators.get(kind as RuleKind)
      if (check === undefined || check.Check(rule)) return
      for (const error of check.Errors(rule)) {
        if (error.keyword === 'boolean') continue
        if (error.keyword === 'additionalProperties') {
          const extra = (error.params as { additionalProperties?: string[] }).additionalProperties ?? []
          for (const key of extra) add(`${base}${error.instancePath}/${key}`, CONFIG_REFUSAL.unknownRuleKey(kind))
          continue
        }
        add(`${base}${error.instancePath}`, error.message)
      }
    })
  }
  return problems
}

function allowedValues(schemaPath: string): string {
  // schemaPath is a JSON pointer into ConfigSchema, e.g. '#/properties/observability/properties/logFormat'
  let node: unknown = ConfigSchema
  for (const segment of schemaPath.replace(/^#\/?/, '').split('/').filter((s) => s.length > 0)) {
    if (!isPlainObject(node)) break
    node = node[segment]
  }
  if (isPlainObject(node) && Array.isArray(node['anyOf'])) {
    const values = (node['anyOf'] as unknown[]).map((m) => (isPlainObject(m) ? m['const'] : undefined)).filter((v) => v !== undefined)
    if (values.length > 0) return values.map((v) => JSON.stringify(v)).join(', ')
  }
  return 'the allowed values'
}

/** The merged value once schema defaults are applied; the schema guarantees these shapes. */
interface Defaulted {
  server: { port: number; host: string; baseUrl?: string; shutdownDrainTimeout: number; drainDelaySeconds: number; compatPort?: number; edgeTokens?: string[] }
  observability: Config['observability']
  runtime: { cores?: number; maxHeapBytes?: number; coresCeiling: number; serveMaxInFlight?: number; cgroupPath: string }
  limits: Config['limits']
  cache: Config['cache']
  queue: { kind: 'embedded' | 'sqs'; path: string; url?: string; region?: string; endpoint?: string; maxReceiveCount: number }
  store: { kind: 'embedded' | 's3'; path: string; bucket?: string; prefix: string; region?: string; endpoint?: string }
  advisories: { osvExportBaseUrl?: string; epssFeedUrl?: string; maxAgeSeconds: number; quietTime: { js: number; py: number }; epssQuietTime: number; pollIntervalSeconds: number }
  dredger: Config['dredger']
  respectUpstreamTarballHost: boolean
  credentials: {
    name: string; provider: 'registry' | 'selfHosted' | 'managedRepo'; token?: string; file?: string; command?: string[]
    domain?: string; domainOwner?: string; region?: string; endpoint?: string; durationSeconds?: number
  }[]
  mounts: Partial<Record<MountKey, DefaultedMount>>
}

interface DefaultedMount {
  upstreams: {
    private?: { url: string; token?: string; credential?: string }
    public: { url?: string; caFile?: string; allowHosts: string[]; allowInternalRanges: string[]; respectTarballHost?: boolean }
  }
  publish?: { target: string; token?: string; scopes: string[]; maxBodyBytes: number; credential?: string }
  mirror?: { target: string; token?: string; credential?: string; simpleUrl?: string }
  integrityFloor?: MountConfig['integrityFloor']
  privateHidesPublic?: boolean
  rules: MountConfig['rules'] extends readonly (infer R)[] ? R[] : never
}

function resolveConfig(
  d: Defaulted,
  documentPath: string | undefined,
  options: LoadOptions,
  problems: ConfigProblem[],
  sourceOf: (path: string) => string,
): Config | undefined {
  const baseUrl = (d.server.baseUrl ?? `http://localhost:${d.server.port}`).replace(/\/+$/, '')
  // The delay counts against the drain bound: at or past it, nothing would be left to finish requests in.
  if (d.server.drainDelaySeconds > 0 && d.server.drainDelaySeconds >= d.server.shutdownDrainTimeout) {
    problems.push({ path: 'server.drainDelaySeconds', message: CONFIG_REFUSAL.drainDelayNotBelowDrainTimeout(d.server.drainDelaySeconds, d.server.shutdownDrainTimeout), source: sourceOf('server.drainDelaySeconds') })
  }
  if (d.queue.kind === 'sqs' && d.queue.url === undefined) {
    problems.push({ path: 'queue.url', message: CONFIG_REFUSAL.requiredForSqs, source: sourceOf('queue') })
  }
  if (d.store.kind === 's3' && d.store.bucket === undefined) {
    problems.push({ path: 'store.bucket', message: CONFIG_REFUSAL.requiredForS3, source: sourceOf('store') })
  }

  const credentials = resolveCredentials(d.credentials, problems, sourceOf)
  const known = new Set(credentials.map((c) => c.name))
  const reference = (path: string, name: string | undefined, token: string | undefined): void => {
    if (name === undefined) return
    if (!known.has(name)) problems.push({ path, message: CONFIG_REFUSAL.credentialUnknown(name), source: sourceOf(path) })
    if (token !== undefined) problems.push({ path, message: CONFIG_REFUSAL.credentialWithToken, source: sourceOf(path) })
  }

  const mounts: Partial<Record<MountKey, MountConfig>> = {}
  for (const key of MOUNT_KEYS) {
    const m = d.mounts[key]
    if (m === undefined) continue
    const at = (suffix: string): string => `mounts.${key}.${suffix}`

    let publicUpstream: PublicUpstreamConfig | undefined
    let publicUrl = m.upstreams.public.url
    let urlOrigin: PublicUpstreamConfig['urlOrigin'] = 'configured'
    if (publicUrl === undefined && key === 'js') {
      publicUrl = (options.npmRegistry ?? npmClientRegistry)()
      urlOrigin = 'npm-client'
      if (publicUrl === undefined) {
        problems.push({ path: at('upstreams.public.url'), message: CONFIG_REFUSAL.npmRegistryUnset, source: sourceOf(at('upstreams.public.url')) })
      }
    }
    if (publicUrl !== undefined) {
      // A configured URL was checked with the others; the npm client's is checked here.
      const problem = urlOrigin === 'npm-client' ? urlProblem(publicUrl, UPSTREAM_URL_RULES.public) : undefined
      if (problem !== undefined) problems.push({ path: at('upstreams.public.url'), message: problem, source: NPM_CLIENT_SOURCE })
      publicUpstream = {
        url: publicUrl,
        urlOrigin,
        caFile: m.upstreams.public.caFile,
        allowHosts: m.upstreams.public.allowHosts,
        allowInternalRanges: m.upstreams.public.allowInternalRanges,
        respectTarballHost: m.upstreams.public.respectTarballHost ?? d.respectUpstreamTarballHost,
      }
    }

    const own = loopProblem(baseUrl, d.server.port, [
      [at('upstreams.private.url'), m.upstreams.private?.url],
      [at('upstreams.public.url'), publicUpstream?.url],
    ])
    for (const [path, message] of own) {
      problems.push({ path, message, source: urlOrigin === 'npm-client' && path.endsWith('public.url') ? NPM_CLIENT_SOURCE : sourceOf(path) })
    }

    reference(at('upstreams.private.credential'), m.upstreams.private?.credential, m.upstreams.private?.token)
    reference(at('publish.credential'), m.publish?.credential, m.publish?.token)
    reference(at('mirror.credential'), m.mirror?.credential, m.mirror?.token)
    if (key === 'py' && m.publish !== undefined) problems.push({ path: at('publish'), message: CONFIG_REFUSAL.pyPublishNotBuilt, source: sourceOf(at('publish')) })
    if (key !== 'py' && m.publish !== undefined && (d.server.edgeTokens ?? []).length === 0) problems.push({ path: at('publish'), message: CONFIG_REFUSAL.publishNeedsEdgeTokens, source: sourceOf(at('publish')) })
    if (key !== 'py' && m.mirror?.simpleUrl !== undefined) problems.push({ path: at('mirror.simpleUrl'), message: CONFIG_REFUSAL.pyOnlyKey, source: sourceOf(at('mirror.simpleUrl')) })
    if (key !== 'py' && m.privateHidesPublic !== undefined) problems.push({ path: at('privateHidesPublic'), message: CONFIG_REFUSAL.pyOnlyKey, source: sourceOf(at('privateHidesPublic')) })
    mounts[key] = {
      key,
      upstreams: {
        private: m.upstreams.private === undefined ? undefined : {
          url: m.upstreams.private.url,
          token: token(m.upstreams.private.token),
          ...(m.upstreams.private.credential === undefined ? {} : { credential: m.upstreams.private.credential }),
        },
        public: publicUpstream,
      },
      publish: m.publish === undefined ? undefined : {
        target: m.publish.target, token: token(m.publish.token), scopes: m.publish.scopes, maxBodyBytes: m.publish.maxBodyBytes,
        ...(m.publish.credential === undefined ? {} : { credential: m.publish.credential }),
      },
      mirror: m.mirror === undefined ? undefined : {
        target: m.mirror.target, token: token(m.mirror.token),
        ...(m.mirror.credential === undefined ? {} : { credential: m.mirror.credential }),
        ...(m.mirror.simpleUrl === undefined ? {} : { simpleUrl: m.mirror.simpleUrl }),
      },
      integrityFloor: m.integrityFloor ?? DEFAULT_INTEGRITY_FLOOR[key],
      privateHidesPublic: m.privateHidesPublic ?? true,
      rules: m.rules,
    }
  }
  if (problems.length > 0) return undefined

  return {
    server: {
      port: d.server.port, host: d.server.host, baseUrl, shutdownDrainTimeout: d.server.shutdownDrainTimeout, drainDelaySeconds: d.server.drainDelaySeconds,
      ...(d.server.compatPort === undefined ? {} : { compatPort: d.server.compatPort }),
      edgeTokens: (d.server.edgeTokens ?? []).map((value) => new BearerToken(value)),
    },
    observability: d.observability,
    runtime: {
      cores: d.runtime.cores,
      maxHeapBytes: d.runtime.maxHeapBytes,
      coresCeiling: d.runtime.coresCeiling,
      serveMaxInFlight: d.runtime.serveMaxInFlight,
      cgroupPath: d.runtime.cgroupPath,
    },
    limits: d.limits,
    cache: d.cache,
    queue: { kind: d.queue.kind, path: d.queue.path, url: d.queue.url, region: d.queue.region, endpoint: d.queue.endpoint, maxReceiveCount: d.queue.maxReceiveCount },
    store: { kind: d.store.kind, path: d.store.path, bucket: d.store.bucket, prefix: d.store.prefix, region: d.store.region, endpoint: d.store.endpoint },
    advisories: {
      osvExportBaseUrl: d.advisories.osvExportBaseUrl,
      epssFeedUrl: d.advisories.epssFeedUrl,
      maxAgeSeconds: d.advisories.maxAgeSeconds,
      quietTime: d.advisories.quietTime,
      epssQuietTime: d.advisories.epssQuietTime,
      pollIntervalSeconds: d.advisories.pollIntervalSeconds,
    },
    dredger: d.dredger,
    respectUpstreamTarballHost: d.respectUpstreamTarballHost,
    credentials,
    mounts,
    source: { document: documentPath },
  }
}

const NPM_CLIENT_SOURCE = 'the local npm client\'s registry setting'

/** The rules of the upstream base URLs, wherever they come from. */
const UPSTREAM_URL_RULES = {
  private: { base: true },
  public: { base: true, httpsOnly: true },
} as const satisfies Record<string, UrlRuleOptions>

/** Where URLs sit in the document; `*` is a mount key. */
const URL_KEYS: readonly [string, UrlRuleOptions][] = [
  ['server.baseUrl', {}],
  ['queue.url', {}],
  ['queue.endpoint', {}],
  ['store.endpoint', {}],
  ['advisories.osvExportBaseUrl', {}],
  ['advisories.epssFeedUrl', {}],
  ['mounts.*.upstreams.private.url', UPSTREAM_URL_RULES.private],
  ['mounts.*.upstreams.public.url', UPSTREAM_URL_RULES.public],
  ['mounts.*.publish.target', {}],
  ['mounts.*.mirror.target', {}],
  ['mounts.*.mirror.simpleUrl', {}],
]

/** Checked on the merged value, before defaults, so they join the schema problems in one report. */
function urlProblems(merged: Record<string, unknown>, sourceOf: (path: string) => string): ConfigProblem[] {
  const problems: ConfigProblem[] = []
  for (const [pattern, options] of URL_KEYS) {
    for (const key of MOUNT_KEYS) {
      const path = pattern.replace('*', key)
      let node: unknown = merged
      for (const segment of path.split('.')) node = isPlainObject(node) ? node[segment] : undefined
      if (typeof node !== 'string') continue
      const problem = urlProblem(node, options)
      if (problem !== undefined) problems.push({ path, message: problem, source: sourceOf(path) })
      if (!pattern.includes('*')) break
    }
  }
  return problems
}

/**
 * What a role would otherwise refuse only when it builds its objects: here,
 * so that `service check-config` refuses exactly what boot refuses (SPEC.md
 * 1.8, 7.2). The builders keep their own guards.
 */
function buildProblems(merged: Record<string, unknown>, sourceOf: (path: string) => string): ConfigProblem[] {
  const problems: ConfigProblem[] = []
  const add = (path: string, message: string): void => { problems.push({ path, message, source: sourceOf(path) }) }
  const mounts = isPlainObject(merged['mounts']) ? merged['mounts'] : {}
  for (const key of MOUNT_KEYS) {
    const mount = mounts[key]
    if (!isPlainObject(mount)) continue
    const upstreams = isPlainObject(mount['upstreams']) ? mount['upstreams'] : {}
    const ranges = isPlainObject(upstreams['public']) ? upstreams['public']['allowInternalRanges'] : undefined
    if (Array.isArray(ranges)) {
      ranges.forEach((range: unknown, index) => {
        if (typeof range === 'string' && !isCidr(range)) add(`mounts.${key}.upstreams.public.allowInternalRanges.${index}`, CONFIG_REFUSAL.notCidr(range))
      })
    }
    // `packages` patterns (engine/policy/package-selector.ts): the grammar depends on the mount's ecosystem.
    const rules = mount['rules']
    if (Array.isArray(rules)) {
      rules.forEach((rule: unknown, index) => {
        const npmOnly = isPlainObject(rule) ? npmOnlyProblem(key, rule['rule']) : undefined
        if (npmOnly !== undefined) add(`mounts.${key}.rules.${index}.rule`, npmOnly)
        const packages = isPlainObject(rule) ? rule['packages'] : undefined
        if (!Array.isArray(packages)) return
        packages.forEach((pattern: unknown, at) => {
          const problem = typeof pattern === 'string' && pattern.length > 0 ? selectorProblem(key, pattern) : undefined
          if (problem !== undefined) add(`mounts.${key}.rules.${index}.packages.${at}`, problem)
        })
      })
    }
  }
  const store = isPlainObject(merged['store']) ? merged['store'] : {}
  if (store['kind'] === 's3' && typeof store['prefix'] === 'string') {
    try {
      checkObjectPrefix(store['prefix'])
    } catch (error) {
      add('store.prefix', CONFIG_REFUSAL.storePrefixUnusable((error as Error).message))
    }
  }
  return problems
}

/** A managedRepo token's lifetime when none is asked for: an hour (CodeArtifact allows 15 minutes to 12 hours). */
export const DEFAULT_MANAGED_REPO_SECONDS = 3600

/** The credential providers, each with exactly its provider's fields (the schema cannot say which). */
function resolveCredentials(entries: Defaulted['credentials'], problems: ConfigProblem[], sourceOf: (path: string) => string): CredentialConfig[] {
  const out: CredentialConfig[] = []
  const seen = new Set<string>()
  entries.forEach((entry, index) => {
    const path = `credentials.${index}`
    const add = (message: string): void => { problems.push({ path, message, source: sourceOf('credentials') }) }
    if (seen.has(entry.name)) add(CONFIG_REFUSAL.credentialDuplicate(entry.name))
    seen.add(entry.name)
    const managedFields = entry.domain !== undefined || entry.domainOwner !== undefined || entry.region !== undefined || entry.endpoint !== undefined || entry.durationSeconds !== undefined
    if (entry.provider === 'managedRepo') {
      if (entry.domain === undefined || entry.region === undefined || entry.token !== undefined || entry.file !== undefined || entry.command !== undefined) add(CONFIG_REFUSAL.credentialManagedRepoShape)
      else {
        out.push({
          name: entry.name, provider: 'managedRepo', domain: entry.domain, domainOwner: entry.domainOwner, region: entry.region,
          endpoint: entry.endpoint, durationSeconds: entry.durationSeconds ?? DEFAULT_MANAGED_REPO_SECONDS,
        })
      }
      return
    }
    if (managedFields) {
      add(CONFIG_REFUSAL.credentialManagedFieldsElsewhere)
      return
    }
    if (entry.provider === 'registry') {
      if (entry.token === undefined || entry.file !== undefined || entry.command !== undefined) add(CONFIG_REFUSAL.credentialRegistryShape)
      else out.push({ name: entry.name, provider: 'registry', token: new BearerToken(entry.token) })
      return
    }
    if (entry.token !== undefined || (entry.file === undefined) === (entry.command === undefined)) add(CONFIG_REFUSAL.credentialSelfHostedShape)
    else if (entry.file !== undefined) out.push({ name: entry.name, provider: 'selfHosted', file: entry.file })
    else if (entry.command !== undefined) out.push({ name: entry.name, provider: 'selfHosted', command: entry.command })
  })
  return out
}

function token(value: string | undefined): BearerToken | undefined {
  return value === undefined ? undefined : new BearerToken(value)
}

/**
 * DESIGN.md: once npm points at the proxy, npm's configured registry IS the
 * proxy. An upstream on our own origin would recurse forever, so it is
 * refused at boot, naming the setting to fix.
 */
function loopProblem(baseUrl: string, port: number, upstreams: [string, string | undefined][]): [string, string][] {
  const own = new Set<string>()
  try { own.add(new URL(baseUrl).host) } catch { /* reported by the URL check */ }
  for (const host of ['localhost', '127.0.0.1', '[::1]', '0.0.0.0']) own.add(`${host}:${port}`)
  const out: [string, string][] = []
  for (const [path, url] of upstreams) {
    if (url === undefined) continue
    let host: string
    try {
      const parsed = new URL(url)
      host = parsed.port === '' ? `${parsed.hostname}:${parsed.protocol === 'https:' ? 443 : 80}` : parsed.host
    } catch { continue }
    const bare = host.replace(/:(80|443)$/, '')
    if (own.has(host) || own.has(bare)) {
      // The npm client's registry reaches here unchecked for userinfo: echo it credential-free.
      out.push([path, CONFIG_REFUSAL.upstreamIsThisProxy(credentialFreeUrl(url))])
    }
  }
  return out
}

function npmClientRegistry(): string | undefined {
  try {
    const out = execFileSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8', timeout: 15_000, stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    return out === '' || out === 'undefined' ? undefined : out
  } catch {
    return undefined
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const child of Object.values(value)) deepFreeze(child)
  }
  return value
}
