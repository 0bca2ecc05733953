/**
 * The "public registry" of the install-time scenario: a recorded tree
 * (bench/fixtures/install-tree.ts) served over https on 127.0.0.1 by nginx
 * from files, with the bench's throwaway CA (bench/peers/tls.ts).
 *
 * Why nginx from files rather than a Verdaccio holding the tree: the public
 * registry is a CDN in front of documents rendered ahead of time. nginx
 * answers from files at almost no CPU (the two cores are shared by every
 * client, registry and proxy of a run), each form is made once when the tree
 * is laid out (the full document, the abbreviated one, each with its gzip
 * beside it, as the registry serves both), and ETags, `If-None-Match` and
 * 304s are nginx's own. A Verdaccio parses and writes every document again on
 * every request, which would make the "public registry" the slowest party of
 * the run, and it serves the abbreviated form from its own storage format.
 *
 * Every packument is laid out whole, each version pointing at a local
 * tarball under this registry's origin; the tarballs the lockfiles install
 * are written (made again from their manifests and checked against the
 * integrity recorded in package-lock.json). The access log counts what each
 * phase asked of the public side.
 */
import { chmod, mkdir, mkdtemp, open, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { gzip } from 'node:zlib'
import {
  abbreviatedPackument, lockedVersions, mergeLocked, packumentFile, servedPackument, tarballPath, versionDigests, versionTarball,
  LOCKFILES, type Packument, type RecordedTree,
} from '../fixtures/install-tree.js'
import { digestsOf } from '../fixtures/npm-tarball.js'
import { freePort, isUnavailable, startNginx, type NginxServer } from '../lib/nginx.js'
import type { TestCa } from './tls.js'

const gzipAsync = promisify(gzip)
/** Packages laid out at once: enough to keep the zlib threads busy, few enough to bound memory. */
const LAYOUT_CONCURRENCY = 4

/** What the public side was asked, by kind, since the last count. */
export interface PublicRequests {
  /** Packument answers with a body: the full form, the abbreviated form. */
  readonly full: number
  readonly abbreviated: number
  /** Conditional packument requests answered 304. */
  readonly notModified: number
  readonly tarballs: number
  readonly notFound: number
  readonly other: number
  /** Body bytes sent (compressed where the answer was). */
  readonly bytes: number
}

export function countRequests(lines: readonly string[]): PublicRequests {
  const count = { full: 0, abbreviated: 0, notModified: 0, tarballs: 0, notFound: 0, other: 0, bytes: 0 }
  for (const line of lines) {
    const match = /^(\S+) (\S+) (\d{3}) (\d+) "(.*)"$/.exec(line)
    if (match === null) continue
    const [, method, uri = '', statusText, bytes, accept = ''] = match
    const status = Number(statusText)
    count.bytes += Number(bytes)
    if (method !== 'GET' && method !== 'HEAD') count.other++
    else if (status === 404) count.notFound++
    else if (/\/-\/[^/]+\.tgz$/.test(uri)) count[status === 200 ? 'tarballs' : 'other']++
    else if (status === 304) count.notModified++
    else if (status === 200) count[accept.includes('application/vnd.npm.install-v1+json') ? 'abbreviated' : 'full']++
    else count.other++
  }
  return count
}

export class PublicFixtureRegistry {
  /** The registry URL as clients and upstream settings take it, with a trailing slash. */
  readonly url: string
  readonly origin: string
  readonly caFile: string
  /** Packuments laid out, and the tarballs written for the lockfiles. */
  readonly packuments: number
  readonly tarballs: number
  readonly #root: string
  readonly #accessLog: string
  readonly #ca: TestCa
  readonly #port: number
  #nginx: NginxServer
  #logOffset = 0

  private constructor(init: { root: string, accessLog: string, ca: TestCa, port: number, nginx: NginxServer, packuments: number, tarballs: number }) {
    this.#root = init.root
    this.#accessLog = init.accessLog
    this.#ca = init.ca
    this.#port = init.port
    this.#nginx = init.nginx
    this.origin = `https://127.0.0.1:${init.port}`
    this.url = `${this.origin}/`
    this.caFile = init.ca.caFile
    this.packuments = init.packuments
    this.tarballs = init.tarballs
  }

  /** Lays the tree out for a port picked now, then serves it there; a string says why it cannot run. */
  static async start(tree: RecordedTree, ca: TestCa): Promise<PublicFixtureRegistry | string> {
    const root = await mkdtemp(join(tmpdir(), 'bench-public-registry-'))
    try {
      // nginx started as root serves as an unprivileged worker: the folders must be traversable.
      await chmod(root, 0o755)
      const port = await freePort()
      const counts = await layOut(tree, join(root, 'www'), `https://127.0.0.1:${port}`)
      const accessLog = join(root, 'access.log')
      await writeFile(accessLog, '')
      const nginx = await startRegistryNginx(join(root, 'www'), accessLog, ca, port)
      if (typeof nginx === 'string') {
        await rm(root, { recursive: true, force: true })
        return nginx
      }
      return new PublicFixtureRegistry({ root, accessLog, ca, port, nginx, ...counts })
    } catch (error) {
      await rm(root, { recursive: true, force: true })
      throw error
    }
  }

  get pid(): number {
    return this.#nginx.pid
  }

  /** The access log's size: it grows with every request answered, and reading it counts nothing. */
  async loggedBytes(): Promise<number> {
    return (await stat(this.#accessLog)).size
  }

  /** What was asked since the last take (or the start). */
  async take(): Promise<PublicRequests> {
    const file = await open(this.#accessLog, 'r')
    try {
      const { size } = await file.stat()
      const buffer = Buffer.alloc(size - this.#logOffset)
      await file.read(buffer, 0, buffer.length, this.#logOffset)
      const text = buffer.toString('utf8')
      const complete = text.lastIndexOf('\n') + 1
      this.#logOffset += Buffer.byteLength(text.slice(0, complete))
      return countRequests(text.slice(0, complete).split('\n'))
    } finally {
      await file.close()
    }
  }

  /** Stops nginx and starts it again on the same port with the same files. */
  async restart(): Promise<void> {
    await this.#nginx.stop()
    const nginx = await startRegistryNginx(join(this.#root, 'www'), this.#accessLog, this.#ca, this.#port)
    if (typeof nginx === 'string') throw new Error(`the public registry did not start again: ${nginx}`)
    this.#nginx = nginx
  }

  async stop(): Promise<void> {
    await this.#nginx.stop()
    await rm(this.#root, { recursive: true, force: true })
  }
}

async function startRegistryNginx(www: string, accessLog: string, ca: TestCa, port: number): Promise<NginxServer | string> {
  const nginx = await startNginx({ kind: 'registry', root: www, accessLog }, { port, workers: 'auto', tls: { certFile: ca.certFile, keyFile: ca.keyFile, caPem: ca.caPem } })
  return isUnavailable(nginx) ? nginx.unavailable : nginx
}

/** The integrity package-lock.json records for each `name@version` it installs. */
function lockedIntegrity(tree: RecordedTree): Map<string, string> {
  const lock = JSON.parse(tree.lockfiles['package-lock.json']) as { packages?: Record<string, { resolved?: string, version?: string, integrity?: string, name?: string }> }
  const out = new Map<string, string>()
  for (const [path, entry] of Object.entries(lock.packages ?? {})) {
    if (path === '' || entry.integrity === undefined || entry.version === undefined) continue
    const name = entry.name ?? path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length)
    out.set(`${name}@${entry.version}`, entry.integrity)
  }
  return out
}

/** Writes every packument's two forms (each with its gzip) and the locked tarballs under `www`. */
async function layOut(tree: RecordedTree, www: string, origin: string): Promise<{ packuments: number, tarballs: number }> {
  const locked = mergeLocked(LOCKFILES.map((file) => lockedVersions(file, tree.lockfiles[file])))
  const integrity = lockedIntegrity(tree)
  const names = [...tree.manifest.packages]
  let tarballs = 0
  const layOne = async (name: string): Promise<void> => {
    const doc = JSON.parse(await readFile(packumentFile(tree.dir, name), 'utf8')) as Packument
    const digests = versionDigests(doc)
    const served = servedPackument(doc, origin, digests)
    const folder = join(www, ...name.split('/'))
    await mkdir(join(folder, '-'), { recursive: true })
    for (const [file, text] of [['index.json', JSON.stringify(served)], ['index.corgi', JSON.stringify(abbreviatedPackument(served))]] as const) {
      const bytes = Buffer.from(text)
      await writeFile(join(folder, file), bytes)
      await writeFile(join(folder, `${file}.gz`), await gzipAsync(bytes))
    }
    for (const version of locked.get(name) ?? []) {
      const tarball = versionTarball(doc, version)
      const expected = integrity.get(`${name}@${version}`)
      if (expected !== undefined && expected !== digestsOf(tarball).integrity) {
        throw new Error(`the tarball made for ${name}@${version} does not match package-lock.json's integrity (another zlib?): record the tree again`)
      }
      const path = join(www, ...tarballPath(name, version).slice(1).split('/'))
      await mkdir(dirname(path), { recursive: true })
      await writeFile(path, tarball)
      tarballs++
    }
  }
  for (const [name] of locked) if (!names.includes(name)) throw new Error(`a lockfile installs ${name}, which the tree has no packument for: record the tree again`)
  let next = 0
  await Promise.all(Array.from({ length: LAYOUT_CONCURRENCY }, async () => {
    while (next < names.length) await layOne(names[next++] as string)
  }))
  return { packuments: names.length, tarballs }
}
