/**
 * The HTTP forward proxy that upstream requests leave through, when the
 * deployment has one (docs/security.md#forward-proxy; issue 32 item 3).
 *
 * Every upstream connection through it is a CONNECT tunnel, to https and
 * plain http targets alike: one code path, the bytes end to end (TLS
 * between this process and the target, the certificate checked against the
 * target's name), and no absolute-form request that a proxy could rewrite.
 *
 * The egress policy judges the TARGET, never the proxy: the allowlist and
 * the tarball-host policy run on the URL as before, and on the untrusted
 * side the target's name is resolved HERE and its addresses judged by the
 * internal-range block; the tunnel is then asked for the judged address
 * (`CONNECT 203.0.113.7:443`), not the name, so the proxy's own resolver
 * cannot lead the tunnel into an internal range the policy refuses. The
 * `Host` header, the TLS server name and the certificate check keep the
 * name. The trusted private side asks for its name (it is exempt from the
 * range block, and the proxy may be the only one that can resolve it).
 * The proxy's own address is not judged: it is usually internal.
 *
 * The proxy's credential is a secret (Proxy-Authorization: Basic); the
 * proxy is named in errors and logs by `http://host:port` only.
 */
import { connect as netConnect, isIP, type Socket } from 'node:net'
import type { LookupAddress } from 'node:dns'
import { ServiceError } from '../errors.js'
import { BearerToken } from '../secret.js'
import { NoProxyList } from './no-proxy.js'
import type { LookupCallback } from './egress-guard.js'
import type { RequestAbort } from './http1/request-abort.js'

/** Largest CONNECT answer head read: far above any real proxy's, small enough to bound a hostile one. */
const MAX_CONNECT_HEAD_BYTES = 16 * 1024

/** One forward proxy: where it is, how it is named, and its credential. */
export interface ProxyRoute {
  readonly host: string
  readonly port: number
  /** `http://host:port`: what errors and logs name, never with a credential. */
  readonly label: string
  /** `user:password` for Proxy-Authorization: Basic. */
  readonly credential: BearerToken | undefined
}

/** The `egress.proxy` settings as resolved from the configuration. */
export interface ForwardProxySettings {
  readonly url?: string | undefined
  readonly credential?: BearerToken | undefined
  readonly noProxy?: readonly string[] | undefined
  readonly environment: boolean
}

/** How upstream connections leave: the proxy per target scheme, and the hosts reached directly. */
export class ForwardProxy {
  readonly #https: ProxyRoute | undefined
  readonly #http: ProxyRoute | undefined
  readonly noProxy: NoProxyList

  constructor(routes: { https?: ProxyRoute | undefined, http?: ProxyRoute | undefined }, noProxy: NoProxyList) {
    this.#https = routes.https
    this.#http = routes.http
    this.noProxy = noProxy
  }

  /** The proxy a connection to `target` goes through, or undefined to connect directly. */
  routeFor(protocol: string, hostname: string, port: number): ProxyRoute | undefined {
    const route = protocol === 'https:' ? this.#https : protocol === 'http:' ? this.#http : undefined
    if (route === undefined || this.noProxy.bypasses(hostname, port)) return undefined
    return route
  }

  /** What the boot line says: the proxies by label and the NO_PROXY entries. */
  describe(): Record<string, unknown> {
    return {
      ...(this.#https === undefined ? {} : { https: this.#https.label }),
      ...(this.#http === undefined ? {} : { http: this.#http.label }),
      noProxy: this.noProxy.entries,
    }
  }
}

/**
 * A proxy URL as `http://host:port`. `allowUserinfo` (an environment
 * variable, where `http://user:pass@proxy:3128` is the convention) moves
 * the userinfo into the credential; in the configuration it is refused,
 * since a URL is echoed and logged (`egress.proxy.credential` holds it).
 */
export function proxyRoute(text: string, credential: BearerToken | undefined, origin: string, allowUserinfo: boolean): ProxyRoute {
  const bad = (why: string): never => { throw new ServiceError('CONFIG_INVALID', { message: `${origin}: ${why}` }) }
  let url: URL
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`)
  } catch {
    return bad('the forward proxy URL does not parse')
  }
  if (url.protocol !== 'http:') bad('the forward proxy must be an http:// URL (the tunnel carries TLS end to end)')
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '') bad('the forward proxy URL takes no path, query or fragment')
  let secret = credential
  if (url.username !== '' || url.password !== '') {
    if (!allowUserinfo) bad('the forward proxy URL must not carry userinfo; set egress.proxy.credential')
    secret ??= new BearerToken(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`)
  }
  const port = url.port === '' ? 80 : Number(url.port)
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port, label: `http://${url.host}`, credential: secret }
}

function firstSet(env: NodeJS.ProcessEnv, names: readonly string[]): [string, string] | undefined {
  for (const name of names) {
    const value = env[name]
    if (value !== undefined && value.trim() !== '') return [name, value.trim()]
  }
  return undefined
}

/**
 * The forward proxy of the configuration and the environment, or undefined
 * when upstream connections go direct. `egress.proxy.url` serves https and
 * http targets; unset (and `environment` on), `https_proxy`/`HTTPS_PROXY`
 * serves https targets and `http_proxy`/`HTTP_PROXY` http ones, the
 * lower-case form first as curl and undici read them. `noProxy` unset:
 * `no_proxy`/`NO_PROXY`.
 */
export function forwardProxyOf(settings: ForwardProxySettings, env: NodeJS.ProcessEnv): ForwardProxy | undefined {
  let https: ProxyRoute | undefined
  let http: ProxyRoute | undefined
  if (settings.url !== undefined) {
    https = http = proxyRoute(settings.url, settings.credential, 'egress.proxy.url', false)
  } else if (settings.environment) {
    const fromHttps = firstSet(env, ['https_proxy', 'HTTPS_PROXY'])
    const fromHttp = firstSet(env, ['http_proxy', 'HTTP_PROXY'])
    if (fromHttps !== undefined) https = proxyRoute(fromHttps[1], settings.credential, `environment ${fromHttps[0]}`, true)
    if (fromHttp !== undefined) http = proxyRoute(fromHttp[1], settings.credential, `environment ${fromHttp[0]}`, true)
  }
  if (https === undefined && http === undefined) return undefined
  const noProxy = settings.noProxy !== undefined
    ? new NoProxyList(settings.noProxy)
    : NoProxyList.parse(settings.environment ? firstSet(env, ['no_proxy', 'NO_PROXY'])?.[1] : undefined)
  return new ForwardProxy({ https, http }, noProxy)
}

export type TargetLookup = (hostname: string, options: object, callback: LookupCallback) => void

/** `host:port` with an IPv6 literal bracketed, as CONNECT's authority-form wants it. */
function authority(host: string, port: number): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`
}

/**
 * What the tunnel is asked for: a literal address as it is (the caller has
 * judged it), else, with the egress guard's `lookup` (the untrusted side),
 * the judged address the name resolves to, else (the trusted side) the name.
 */
export function tunnelTarget(hostname: string, port: number, lookup: TargetLookup | undefined): Promise<string> {
  const host = hostname.replace(/^\[|\]$/g, '')
  if (isIP(host) !== 0 || lookup === undefined) return Promise.resolve(authority(host, port))
  return new Promise((resolve, reject) => {
    lookup(host, { all: false }, (err, address) => {
      if (err !== null) { reject(err); return }
      const first = typeof address === 'string' ? address : (address as LookupAddress[])[0]?.address
      if (first === undefined) { reject(Object.assign(new Error(`no address for ${host}`), { code: 'ENOTFOUND' })); return }
      resolve(authority(first, port))
    })
  })
}

export interface TunnelOptions {
  /** Bound of the TCP connection to the proxy and its CONNECT answer together. */
  readonly timeoutMs: number
  /** The upstream the request was for (`host:port`), named in errors. */
  readonly upstream: string
  readonly abort?: RequestAbort | undefined
  readonly signal?: AbortSignal | undefined
}

/**
 * Opens a CONNECT tunnel to `target` (`host:port`) through `route`. Resolves
 * with the connected socket, paused, nothing read past the proxy's answer.
 * Rejects with EGRESS_PROXY_UNREACHABLE (no connection to the proxy, or it
 * closed before answering), EGRESS_PROXY_REFUSED (any answer but 2xx: 407
 * for a missing or wrong credential, 403 for a target its own policy
 * refuses, 502 when it could not reach the target), EGRESS_PROXY_TIMEOUT
 * past `timeoutMs`, or the abort's reason.
 */
export function openTunnel(route: ProxyRoute, target: string, options: TunnelOptions): Promise<Socket> {
  const where = { proxy: route.label, target, upstream: options.upstream }
  return new Promise<Socket>((resolve, reject) => {
    const socket = netConnect({ host: route.host, port: route.port })
    let head: Buffer = Buffer.alloc(0)
    let settled = false
    const timer = setTimeout(() => {
      fail(new ServiceError('EGRESS_PROXY_TIMEOUT', { data: { ...where, timeoutMs: options.timeoutMs } }))
    }, options.timeoutMs)
    timer.unref()
    const onAbort = (reason: unknown): void => fail(reason ?? new Error('aborted'))
    const finish = (): void => {
      settled = true
      clearTimeout(timer)
      socket.off('data', onData)
      socket.off('error', onError)
      socket.off('close', onClose)
      options.abort?.unlisten(onAbort)
      options.signal?.removeEventListener('abort', onSignal)
    }
    const fail = (err: unknown): void => {
      if (settled) return
      finish()
      socket.destroy()
      reject(err)
    }
    const onSignal = (): void => onAbort(options.signal?.reason)
    const onError = (err: NodeJS.ErrnoException): void => {
      fail(new ServiceError('EGRESS_PROXY_UNREACHABLE', { cause: err, data: { ...where, code: err.code ?? 'unknown' } }))
    }
    const onClose = (): void => {
      fail(new ServiceError('EGRESS_PROXY_UNREACHABLE', { data: { ...where, reason: 'the proxy closed the connection before answering CONNECT' } }))
    }
    const onData = (chunk: Buffer): void => {
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]) as Buffer
      const end = head.indexOf('\r\n\r\n')
      if (end === -1) {
        if (head.length > MAX_CONNECT_HEAD_BYTES) fail(refused('an oversized answer'))
        return
      }
      const status = /^HTTP\/1\.[01] (\d{3})(?: |\r)/.exec(head.subarray(0, Math.min(end + 2, 256)).toString('latin1'))
      if (status === null) { fail(refused('a malformed answer')); return }
      const code = Number(status[1])
      if (code < 200 || code > 299) { fail(refused(undefined, code)); return }
      // Neither an https nor an http target speaks first: bytes past the head are not the target's.
      if (head.length > end + 4) { fail(refused('bytes past its answer')); return }
      socket.pause()
      finish()
      resolve(socket)
    }
    const refused = (reason: string | undefined, status?: number): ServiceError => new ServiceError('EGRESS_PROXY_REFUSED', {
      data: { ...where, ...(status === undefined ? {} : { status }), ...(reason === undefined ? {} : { reason }) },
    })
    socket.on('error', onError)
    socket.on('close', onClose)
    socket.on('data', onData)
    socket.once('connect', () => {
      socket.setNoDelay(true)
      let request = `CONNECT ${target} HTTP/1.1\r\nhost: ${target}\r\n`
      if (route.credential !== undefined) {
        request += `proxy-authorization: Basic ${Buffer.from(route.credential.reveal(), 'utf8').toString('base64')}\r\n`
      }
      socket.write(`${request}\r\n`, 'latin1')
    })
    if (options.abort?.aborted === true) { onAbort(options.abort.reason); return }
    options.abort?.listen(onAbort)
    if (options.signal?.aborted === true) { onSignal(); return }
    options.signal?.addEventListener('abort', onSignal, { once: true })
  })
}

/**
 * The forward proxy (`http://host:port`) and its answer's status of a
 * tunnel failure (EGRESS_PROXY_*), for the failure's log line; empty for
 * any other error.
 */
export function forwardProxyDetail(error: ServiceError): Record<string, unknown> {
  const proxy = error.data?.['proxy']
  if (!error.code.startsWith('EGRESS_PROXY_') || typeof proxy !== 'string') return {}
  const status = error.data?.['status']
  return { proxy, ...(typeof status === 'number' ? { proxyStatus: status } : {}) }
}
