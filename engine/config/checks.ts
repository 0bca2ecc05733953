/**
 * Every rule the configuration is held to, reported all at once (SPEC.md
 * 7.2) so one boot report names every problem. Two passes, because some rules
 * need the defaults applied first:
 * - `documentProblems`, on the merged document before defaults: the schema
 *   (schema-problems.ts), URLs without credentials (SPEC.md 2.11, 5.8), and
 *   what a role's builders would otherwise refuse only when they run;
 * - `crossKeyProblems`, on the defaulted document: rules that join keys
 *   (a queue kind and its URL, a credential and its references, an upstream
 *   that is this proxy) and the js mount's public URL however it was found.
 */
import Guard from 'typebox/guard'
import Value from 'typebox/value'
import { CONFIG_REFUSAL } from '../errors.js'
import { npmOnlyProblem } from '../policy/evaluator.js'
import { parseInstant } from '../policy/instant.js'
import { selectorProblem } from '../policy/package-selector.js'
import { checkObjectPrefix } from '../store/object-key.js'
import { isCidr } from './cidr.js'
import { parseHostAndPort } from './host-and-port.js'
import { CREDENTIAL_SHAPES, type DefaultedDocument } from './config.js'
import type { PublicUpstreamUrls } from './npm-client-registry.js'
import type { ConfigProblem } from './problems.js'
import { resolvedBaseUrl } from './resolve-config.js'
import { schemaProblems } from './schema-problems.js'
import { MOUNT_KEYS } from './schema.js'
import { credentialFreeUrl, urlProblem, type UrlRuleOptions } from './url-rules.js'

type SourceOf = (path: string) => string

export function documentProblems(merged: Record<string, unknown>, sourceOf: SourceOf): ConfigProblem[] {
  return [...schemaProblems(merged, sourceOf), ...urlProblems(merged, sourceOf), ...buildProblems(merged, sourceOf)]
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
  ['cache.url', { redis: true }],
  ['advisories.osvExportBaseUrl', {}],
  ['advisories.epssFeedUrl', {}],
  ['mounts.*.upstreams.private.url', UPSTREAM_URL_RULES.private],
  ['mounts.*.upstreams.public.url', UPSTREAM_URL_RULES.public],
  ['mounts.*.publish.target', {}],
  ['mounts.*.mirror.target', {}],
  ['mounts.*.mirror.simpleUrl', {}],
]

/** Checked on the merged value, before defaults, so they join the schema problems in one report. */
function urlProblems(merged: Record<string, unknown>, sourceOf: SourceOf): ConfigProblem[] {
  const problems: ConfigProblem[] = []
  for (const [pattern, options] of URL_KEYS) {
    for (const key of MOUNT_KEYS) {
      const path = pattern.replace('*', key)
      let node: unknown = merged
      for (const segment of path.split('.')) node = Guard.IsObjectNotArray(node) ? node[segment] : undefined
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
function buildProblems(merged: Record<string, unknown>, sourceOf: SourceOf): ConfigProblem[] {
  const problems: ConfigProblem[] = []
  const add = (path: string, message: string): void => { problems.push({ path, message, source: sourceOf(path) }) }
  const mounts = Guard.IsObjectNotArray(merged['mounts']) ? merged['mounts'] : {}
  for (const key of MOUNT_KEYS) {
    const mount = mounts[key]
    if (!Guard.IsObjectNotArray(mount)) continue
    const upstreams = Guard.IsObjectNotArray(mount['upstreams']) ? mount['upstreams'] : {}
    const ranges = Guard.IsObjectNotArray(upstreams['public']) ? upstreams['public']['allowInternalRanges'] : undefined
    if (Array.isArray(ranges)) {
      ranges.forEach((range: unknown, index) => {
        if (typeof range === 'string' && !isCidr(range)) add(`mounts.${key}.upstreams.public.allowInternalRanges.${index}`, CONFIG_REFUSAL.notCidr(range))
      })
    }
    // `packages` patterns (engine/policy/package-selector.ts): the grammar depends on the mount's ecosystem.
    const rules = mount['rules']
    if (Array.isArray(rules)) {
      rules.forEach((rule: unknown, index) => {
        const npmOnly = Guard.IsObjectNotArray(rule) ? npmOnlyProblem(key, rule['rule']) : undefined
        if (npmOnly !== undefined) add(`mounts.${key}.rules.${index}.rule`, npmOnly)
        // An instant's form and calendar (no 30 February): the schema only knows it is a string.
        const at = Guard.IsObjectNotArray(rule) && rule['rule'] === 'DenyIfPublishedAfter' ? rule['at'] : undefined
        const instant = typeof at === 'string' && at.length > 0 ? parseInstant(at) : undefined
        if (typeof instant === 'string') add(`mounts.${key}.rules.${index}.at`, instant)
        const packages = Guard.IsObjectNotArray(rule) ? rule['packages'] : undefined
        if (!Array.isArray(packages)) return
        packages.forEach((pattern: unknown, at) => {
          const problem = typeof pattern === 'string' && pattern.length > 0 ? selectorProblem(key, pattern) : undefined
          if (problem !== undefined) add(`mounts.${key}.rules.${index}.packages.${at}`, problem)
        })
      })
    }
  }
  // The request-origin settings (server/http/request-origin.ts).
  const server = Guard.IsObjectNotArray(merged['server']) ? merged['server'] : {}
  const listed = (key: string, problem: (value: string) => string | undefined): void => {
    const values = server[key]
    if (!Array.isArray(values)) return
    values.forEach((value: unknown, index) => {
      const message = typeof value === 'string' ? problem(value) : undefined
      if (message !== undefined) add(`server.${key}.${index}`, message)
    })
  }
  listed('trustedProxies', (value) => (isCidr(value) ? undefined : CONFIG_REFUSAL.notCidr(value)))
  listed('allowedHosts', (value) => (parseHostAndPort(value) === undefined ? CONFIG_REFUSAL.notHostName(value) : undefined))
  const store = Guard.IsObjectNotArray(merged['store']) ? merged['store'] : {}
  if (store['kind'] === 's3' && typeof store['prefix'] === 'string') {
    try {
      checkObjectPrefix(store['prefix'])
    } catch (error) {
      add('store.prefix', CONFIG_REFUSAL.storePrefixUnusable((error as Error).message))
    }
  }
  return problems
}

export function crossKeyProblems(d: DefaultedDocument, publicUrls: PublicUpstreamUrls, sourceOf: SourceOf): ConfigProblem[] {
  const problems: ConfigProblem[] = []
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
  if (d.policy.store && d.policy.file !== undefined) {
    problems.push({ path: 'policy.store', message: CONFIG_REFUSAL.policySourcesExclusive, source: sourceOf('policy.store') })
  }
  if (d.cache.backend === 'redis' && d.cache.url === undefined) {
    problems.push({ path: 'cache.url', message: CONFIG_REFUSAL.requiredForRedis, source: sourceOf('cache') })
  }

  const known = credentialNames(d.credentials, problems, sourceOf)
  const reference = (path: string, name: string | undefined, token: string | undefined): void => {
    if (name === undefined) return
    if (!known.has(name)) problems.push({ path, message: CONFIG_REFUSAL.credentialUnknown(name), source: sourceOf(path) })
    if (token !== undefined) problems.push({ path, message: CONFIG_REFUSAL.credentialWithToken, source: sourceOf(path) })
  }

  const baseUrl = resolvedBaseUrl(d.server)
  for (const key of MOUNT_KEYS) {
    const m = d.mounts[key]
    const publicUrl = publicUrls[key]
    if (m === undefined || publicUrl === undefined) continue
    const at = (suffix: string): string => `mounts.${key}.${suffix}`

    const fromNpm = publicUrl.origin === 'npm-client'
    if (fromNpm && publicUrl.url === undefined) {
      problems.push({ path: at('upstreams.public.url'), message: CONFIG_REFUSAL.npmRegistryUnset, source: sourceOf(at('upstreams.public.url')) })
    }
    // A configured URL was checked with the others; the npm client's is checked here.
    const npmProblem = fromNpm && publicUrl.url !== undefined ? urlProblem(publicUrl.url, UPSTREAM_URL_RULES.public) : undefined
    if (npmProblem !== undefined) problems.push({ path: at('upstreams.public.url'), message: npmProblem, source: NPM_CLIENT_SOURCE })

    const own = loopProblems(baseUrl, d.server.port, [
      [at('upstreams.private.url'), m.upstreams.private?.url],
      [at('upstreams.public.url'), publicUrl.url],
    ])
    for (const [path, message] of own) {
      problems.push({ path, message, source: fromNpm && path.endsWith('public.url') ? NPM_CLIENT_SOURCE : sourceOf(path) })
    }

    reference(at('upstreams.private.credential'), m.upstreams.private?.credential, m.upstreams.private?.token)
    reference(at('publish.credential'), m.publish?.credential, m.publish?.token)
    reference(at('mirror.credential'), m.mirror?.credential, m.mirror?.token)
    if (key === 'py' && m.publish !== undefined) problems.push({ path: at('publish'), message: CONFIG_REFUSAL.pyPublishNotBuilt, source: sourceOf(at('publish')) })
    if (key !== 'py' && m.publish !== undefined && d.server.edgeTokens.length === 0) problems.push({ path: at('publish'), message: CONFIG_REFUSAL.publishNeedsEdgeTokens, source: sourceOf(at('publish')) })
    if (key !== 'py' && m.mirror?.simpleUrl !== undefined) problems.push({ path: at('mirror.simpleUrl'), message: CONFIG_REFUSAL.pyOnlyKey, source: sourceOf(at('mirror.simpleUrl')) })
    if (key !== 'py' && m.privateHidesPublic !== undefined) problems.push({ path: at('privateHidesPublic'), message: CONFIG_REFUSAL.pyOnlyKey, source: sourceOf(at('privateHidesPublic')) })
  }
  return problems
}

const SHAPE_REFUSAL = {
  registry: CONFIG_REFUSAL.credentialRegistryShape,
  selfHosted: CONFIG_REFUSAL.credentialSelfHostedShape,
  managedRepo: CONFIG_REFUSAL.credentialManagedRepoShape,
} as const

/** The fields only a managedRepo credential takes. */
const MANAGED_ONLY = Object.keys(CREDENTIAL_SHAPES.managedRepo[0].properties).filter((key) => key !== 'name' && key !== 'provider')

/**
 * Each credential held to its provider's shape (CREDENTIAL_SHAPES, which the
 * schema's one flat entry cannot say); returns the names a reference may use.
 */
function credentialNames(entries: DefaultedDocument['credentials'], problems: ConfigProblem[], sourceOf: SourceOf): Set<string> {
  const known = new Set<string>()
  const seen = new Set<string>()
  entries.forEach((entry, index) => {
    const add = (message: string): void => { problems.push({ path: `credentials.${index}`, message, source: sourceOf('credentials') }) }
    if (seen.has(entry.name)) add(CONFIG_REFUSAL.credentialDuplicate(entry.name))
    seen.add(entry.name)
    const fits = CREDENTIAL_SHAPES[entry.provider].some((shape) => Value.Check(shape, entry))
    if (entry.provider !== 'managedRepo' && MANAGED_ONLY.some((field) => (entry as Record<string, unknown>)[field] !== undefined)) add(CONFIG_REFUSAL.credentialManagedFieldsElsewhere)
    else if (!fits) add(SHAPE_REFUSAL[entry.provider])
    if (fits) known.add(entry.name)
  })
  return known
}

/**
 * DESIGN.md: once npm points at the proxy, npm's configured registry IS the
 * proxy. An upstream on our own origin would recurse forever, so it is
 * refused at boot, naming the setting to fix.
 */
function loopProblems(baseUrl: string, port: number, upstreams: [string, string | undefined][]): [string, string][] {
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
