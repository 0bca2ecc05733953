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
import { request } from 'undici'
import { ChildPeer } from '../peers/child-peer.js'
import { findExecutable } from './executables.js'
import { treePeakRssBytes } from './peak-rss.js'

export type NginxSite =
  /** Files under `root`, by path; files without an extension are served as `defaultType`. */
  | { readonly kind: 'static', readonly root: string, readonly defaultType?: string, readonly gzipStatic?: boolean }
  /** A relay to `origin` (e.g. `http://127.0.0.1:4000`) with a keep-alive pool and PEERS.md's buffer tuning. */
  | { readonly kind: 'relay', readonly origin: string }

export interface NginxOptions {
  /** nginx `worker_processes`; default 1, one process like the Node servers it is set against. */
  readonly workers?: number | 'auto'
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
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await startOnce(binary, site, options, await freePort())
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
  if (site.kind === 'static') await chmod(site.root, 0o755)
  const config = nginxConfig(dir, port, site, options)
  await writeFile(join(dir, 'nginx.conf'), config)
  const child = spawn(binary, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const peer = new ChildPeer('nginx', child)
  const origin = `http://127.0.0.1:${port}`
  const stop = async (): Promise<void> => {
    // SIGTERM is nginx's fast shutdown (master and workers); ChildPeer escalates to SIGKILL if it lingers.
    await peer.stop()
    await rm(dir, { recursive: true, force: true })
  }
  try {
    await waitUntilAnswering(origin, peer)
  } catch (error) {
    await stop()
    throw error
  }
  return { origin, port, pid: peer.pid, peakRssBytes: () => treePeakRssBytes(peer.pid), stop }
}

function nginxConfig(dir: string, port: number, site: NginxSite, options: NginxOptions): string {
  const temp = join(dir, 'temp')
  const location = site.kind === 'static'
    ? `root ${site.root};\n      default_type ${site.defaultType ?? 'application/octet-stream'};\n      ${site.gzipStatic === true ? 'gzip_static on; gzip_vary on;\n      ' : ''}location / { try_files $uri =404; }`
    : `location / {
        proxy_pass http://origin;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $http_host;
        proxy_buffering off;
        proxy_buffer_size 256k;
        proxy_buffers 4 256k;
        proxy_busy_buffers_size 512k;
      }`
  const upstream = site.kind === 'relay'
    ? `upstream origin { server ${new URL(site.origin).host}; keepalive 64; }`
    : ''
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
  types { application/json json; application/octet-stream tgz; }
  client_body_temp_path ${temp}/body;
  proxy_temp_path ${temp}/proxy;
  fastcgi_temp_path ${temp}/fastcgi;
  uwsgi_temp_path ${temp}/uwsgi;
  scgi_temp_path ${temp}/scgi;
  ${upstream}
  server {
      listen 127.0.0.1:${port};
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

async function waitUntilAnswering(origin: string, peer: ChildPeer): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    if (!peer.running) throw new Error(`nginx exited:\n${peer.output}`)
    try {
      const response = await request(`${origin}/`)
      await response.body.dump()
      return
    } catch {
      await sleep(50)
    }
  }
  throw new Error(`nginx did not answer on ${origin}:\n${peer.output}`)
}
