/**
 * A scripted public registry over https with a test CA (bench/peers/tls.ts),
 * on 127.0.0.1: any package named `{prefix}-*` exists with one version,
 * 1.0.0, whose tarball is made from the name on demand (so every artifact
 * differs and its digests are known) and whose packument names that tarball
 * under this origin with its sha512 integrity and sha1 shasum. Counts
 * packument reads and tarball downloads per name.
 *
 * Used by the mirror fleet (test/fleet/fleet-rig.ts, prefix `fleet`) and by
 * the mirror-enqueue bench, whose baseline is the proxy's public leg
 * relaying these artifacts (bench/scenarios/mirror-enqueue.ts).
 */
import { createHash } from 'node:crypto'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import type { TestCa } from './tls.js'

export const VERSION = '1.0.0'
/** The tarball size when none is given: 2 KiB. */
const DEFAULT_ARTIFACT_BYTES = 2048

/** The bytes of `name`'s only tarball: `size` bytes derived from the name. */
export function artifactBytes(name: string, size = DEFAULT_ARTIFACT_BYTES): Buffer {
  const out = Buffer.alloc(size)
  let block = createHash('sha256').update(name).digest()
  for (let i = 0; i < out.length; i += block.length) {
    block.copy(out, i)
    block = createHash('sha256').update(block).digest()
  }
  return out
}

export function tarballPath(name: string): string {
  return `/${name}/-/${name}-${VERSION}.tgz`
}

export interface ScriptedPublicUpstreamOptions {
  /** Package names this registry holds: `{prefix}-[a-z0-9-]+`. */
  readonly prefix: string
  /** Each tarball's size; default 2 KiB. */
  readonly artifactBytes?: number
}

export class ScriptedPublicUpstream {
  readonly packumentReads = new Map<string, number>()
  readonly tarballReads = new Map<string, number>()
  readonly artifactBytes: number
  readonly #server: Server
  /** Each name's tarball, made once: a bench asks for the same one thousands of times a second. */
  readonly #tarballs = new Map<string, Buffer>()
  #origin = ''

  private constructor(ca: TestCa, options: ScriptedPublicUpstreamOptions) {
    if (!/^[a-z0-9][a-z0-9-]*$/.test(options.prefix)) throw new TypeError(`ScriptedPublicUpstream: prefix ${options.prefix} is not a package name`)
    this.artifactBytes = options.artifactBytes ?? DEFAULT_ARTIFACT_BYTES
    const tarballRoute = new RegExp(`^/(${options.prefix}-[a-z0-9-]+)/-/\\1-${VERSION.replaceAll('.', '\\.')}\\.tgz$`)
    const packumentRoute = new RegExp(`^/(${options.prefix}-[a-z0-9-]+)$`)
    this.#server = createServer({ key: ca.keyPem, cert: ca.certPem }, (req, res) => {
      const path = (req.url ?? '/').split('?')[0] ?? '/'
      const tarball = tarballRoute.exec(path)
      const packument = packumentRoute.exec(path)
      if (tarball !== null) {
        const name = tarball[1] as string
        this.tarballReads.set(name, (this.tarballReads.get(name) ?? 0) + 1)
        const bytes = this.tarball(name)
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': bytes.length })
        res.end(bytes)
        return
      }
      if (packument !== null) {
        const name = packument[1] as string
        this.packumentReads.set(name, (this.packumentReads.get(name) ?? 0) + 1)
        const bytes = this.tarball(name)
        const body = JSON.stringify({
          name,
          'dist-tags': { latest: VERSION },
          versions: {
            [VERSION]: {
              name, version: VERSION, license: 'MIT', description: `scripted fixture ${name}`,
              dist: {
                tarball: `${this.#origin}${tarballPath(name)}`,
                integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
                shasum: createHash('sha1').update(bytes).digest('hex'),
              },
            },
          },
          time: { created: '2020-01-01T00:00:00.000Z', modified: '2020-01-01T00:00:00.000Z', [VERSION]: '2020-01-01T00:00:00.000Z' },
        })
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
        res.end(body)
        return
      }
      res.writeHead(404, { 'content-length': 0 })
      res.end()
    })
  }

  static async start(ca: TestCa, options: ScriptedPublicUpstreamOptions): Promise<ScriptedPublicUpstream> {
    const upstream = new ScriptedPublicUpstream(ca, options)
    await new Promise<void>((resolve) => upstream.#server.listen(0, '127.0.0.1', resolve))
    upstream.#origin = `https://127.0.0.1:${(upstream.#server.address() as AddressInfo).port}`
    return upstream
  }

  /** The registry URL as upstream settings take it, with a trailing slash. */
  get url(): string { return `${this.#origin}/` }

  /** The bytes of `name`'s tarball as this registry serves it. */
  tarball(name: string): Buffer {
    let bytes = this.#tarballs.get(name)
    if (bytes === undefined) {
      bytes = artifactBytes(name, this.artifactBytes)
      this.#tarballs.set(name, bytes)
    }
    return bytes
  }

  stop(): Promise<void> {
    this.#server.closeAllConnections()
    return new Promise((resolve) => this.#server.close(() => resolve()))
  }
}
