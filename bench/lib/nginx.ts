/**
 * nginx from Debian (`nginx-light`, installed by bench/setup) as a baseline,
 * run in the foreground from a folder of its own (PEERS.md, "Baseline"):
 * either serving files from a folder, or as the tuned keep-alive relay
 * PEERS.md describes in front of an origin. When nginx is not installed,
 * `startNginx` says so with a reason instead of throwing, so a scenario
 * prints the baseline as unavailable.
 */
import { spawn } from 'node:child_process'
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent, request } from 'undici'
import { ChildPeer } from '../peers/child-peer.js'
import { findExecutable } from './executables.js'
import { treePeakRssBytes } from './peak-rss.js'

export type NginxSite =
  /** Files under `root`, by path; files without an extension are served as `defaultType`. */
  | { readonly kind: 'static', readonly root: string, readonly defaultType?: string, readonly gzipStatic?: boolean }
  /**
   * A relay to `origin` (e.g. `http://127.0.0.1:4000`) with a keep-alive pool and PEERS.md's buffer tuning;
   * several origins are taken in turn (nginx's round-robin), one address in front of a tier.
   */
  | { readonly kind: 'relay', readonly origin: string | readonly string[] }
  /**
   * An npm registry's read side from files under `root`, as a CDN serves it:
   * `/<name>` is `<root>/<name>/index.corgi` when the request's Accept names
   * the abbreviated form (`application/vnd.npm.install-v1+json`), else
   * `<root>/<name>/index.json`; `/<name>/-/<file>.tgz` is that file. Each
   * file's `.gz` beside it answers a request that accepts gzip, requests
   * that came through a proxy (`Via`) included. ETags, `If-None-Match` and
   * 304s are nginx's own. Each request is logged to `accessLog` as
   * `<method> <uri> <status> <body bytes> "<accept>"`.
   */
  | { readonly kind: 'registry', readonly root: string, readonly accessLog: string }

export interface NginxOptions {
  /** nginx `worker_processes`; default 1, one process like the Node servers it is set against. */
  readonly workers?: number | 'auto'
  /** Listen on this port (e.g. to start again where clients already point); default: a free one. */
  readonly port?: number
  /** Serve https with this certificate; clients trust `caPem`. */
  readonly tls?: { readonly certFile: string, readonly keyFile: string, readonly caPem: string }
}

export interface NginxServer {
  readonly origin: string
  readonly port: number
  readonly pid: number
  /** Summed VmHWM of the master and its workers, read while running. */
  peakRssBytes(): Promise<number | undefined>
  stop(): Promise<void>
}

export interface Unavailable {
  readonly unavailable: string
}

export function isUnavailable(value: object): value is Unavailable {
  return 'unavailable' in value
}

export async function startNginx(site: NginxSite, options: NginxOptions = {}): Promise<NginxServer | Unavailable> {
  const binary = await findExecutable('nginx')
  if (binary === undefined) return { unavailable: 'nginx is not installed (run bench/setup)' }
  // A port picked then released can be taken meanwhile; try a few.
  let lastError: unknown
  for (let attempt = 0; attempt < (options.port === undefined ? 3 : 1); attempt++) {
    try {
      return await startOnce(binary, site, options, options.port ?? await freePort())
    } catch (error) {
      lastError = error
    }
  }
  return { unavailable: `nginx did not start: ${String(lastError)}` }
}

async function startOnce(binary: string, site: NginxSite, options: NginxOptions, port: number): Promise<NginxServer> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-nginx-'))
  await mkdir(join(dir, 'temp'))
  // Workers may run as another user when nginx starts as root: the served tree must be readable.
  await chmod(dir, 0o755)
  if (site.kind !== 'relay') await chmod(site.root, 0o755)
  const config = nginxConfig(dir, port, site, options)
  await writeFile(join(dir, 'nginx.conf'), config)
  const child = spawn(binary, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const peer = new ChildPeer('nginx', child)
  const origin = `${options.tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}`
  const stop = async (): Promise<void> => {
    // SIGTERM is nginx's fast shutdown (master and workers); ChildPeer escalates to SIGKILL if it lingers.
    await peer.stop()
    await rm(dir, { recursive: true, force: true })
  }
  try {
    await waitUntilAnswering(origin, peer, options.tls?.caPem)
  } catch (error) {
    await stop()
    throw error
  }
  return { origin, port, pid: peer.pid, peakRssBytes: () => treePeakRssBytes(peer.pid), stop }
}

function locationOf(site: NginxSite): string {
  if (site.kind === 'static') {
    return `root ${site.root};\n      default_type ${site.defaultType ?? 'application/octet-stream'};\n      ${site.gzipStatic === true ? 'gzip_static on; gzip_vary on;\n      ' : ''}location / { try_files $uri =404; }`
  }
  if (site.kind === 'registry') {
    return `root ${site.root};
      access_log ${site.accessLog} registry;
      gzip_static on; gzip_vary on; gzip_proxied any;
      add_header Cache-Control "public, max-age=300";
      location ~ "/-/[^/]+\\.tgz$" { default_type application/octet-stream; try_files $uri =404; }
      location / { add_header Cache-Control "public, max-age=300"; add_header Vary Accept; try_files $uri/index.$packument_form =404; }`
  }
  return `location / {
        proxy_pass http://origin;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $http_host;
        proxy_buffering off;
        proxy_buffer_size 256k;
        proxy_buffers 4 256k;
        proxy_busy_buffers_size 512k;
      }`
}

function nginxConfig(dir: string, port: number, site: NginxSite, options: NginxOptions): string {
  const temp = join(dir, 'temp')
  const location = locationOf(site)
  const origins = site.kind === 'relay' ? (typeof site.origin === 'string' ? [site.origin] : site.origin) : []
  const upstream = site.kind === 'relay'
    ? `upstream origin { ${origins.map((o) => `server ${new URL(o).host};`).join(' ')} keepalive 64; }`
    : site.kind === 'registry'
      ? `log_format registry '$request_method $uri $status $body_bytes_sent "$http_accept"';
  map $http_accept $packument_form { ~application/vnd\\.npm\\.install-v1\\+json corgi; default json; }`
      : ''
  const tls = options.tls === undefined ? '' : ` ssl;\n      ssl_certificate ${options.tls.certFile};\n      ssl_certificate_key ${options.tls.keyFile}`
  return `daemon off;
master_process on;
worker_processes ${options.workers ?? 1};
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_timeout 65;
  keepalive_requests 1000000;
  types { application/json json; application/vnd.npm.install-v1+json corgi; application/octet-stream tgz; }
  client_body_temp_path ${temp}/body;
  proxy_temp_path ${temp}/proxy;
  fastcgi_temp_path ${temp}/fastcgi;
  uwsgi_temp_path ${temp}/uwsgi;
  scgi_temp_path ${temp}/scgi;
  ${upstream}
  server {
      listen 127.0.0.1:${port}${tls};
      ${location}
  }
}
`
}

/** A port that was free a moment ago on 127.0.0.1 (the scenarios' peers take theirs from here too). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

async function waitUntilAnswering(origin: string, peer: ChildPeer, caPem: string | undefined): Promise<void> {
  const dispatcher = caPem === undefined ? undefined : new Agent({ connect: { ca: caPem } })
  try {
    for (let attempt = 0; attempt < 100; attempt++) {
      if (!peer.running) throw new Error(`nginx exited:\n${peer.output}`)
      try {
        const response = await request(`${origin}/`, dispatcher === undefined ? {} : { dispatcher })
        await response.body.dump()
        return
      } catch {
        await sleep(50)
      }
    }
    throw new Error(`nginx did not answer on ${origin}:\n${peer.output}`)
  } finally {
    await dispatcher?.close()
  }
}
