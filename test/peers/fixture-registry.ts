/**
 * A small npm registry scripted onto a MisbehavingUpstream (which records
 * every request it gets): packuments, real gzip tarballs made with the
 * `tar` CLI, and, when given a signer, what the public registry adds for
 * `npm audit signatures`: `dist.signatures` (ECDSA P-256 over
 * `${name}@${version}:${integrity}`, as npm's registry signs) and the
 * `/-/npm/v1/keys` document; a version may carry `dist.attestations` and
 * its `/-/npm/v1/attestations/{name}@{version}` document.
 */
import { execFile } from 'node:child_process'
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { MisbehavingUpstream } from './misbehaving-upstream.js'

const run = promisify(execFile)

export interface FixtureVersion {
  readonly name: string
  readonly version: string
  readonly dependencies?: Readonly<Record<string, string>>
  /** The attestations document served for this version (and `dist.attestations` pointing at it). */
  readonly attestations?: Readonly<Record<string, unknown>>
}

export interface RegistrySigner {
  readonly keyid: string
  readonly privateKey: KeyObject
  /** The `/-/npm/v1/keys` document. */
  readonly keys: { readonly keys: readonly Record<string, unknown>[] }
}

/** A throwaway ECDSA P-256 signing key and its keys document, made with node:crypto. */
export function makeSigner(): RegistrySigner {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const spki = publicKey.export({ type: 'spki', format: 'der' })
  const keyid = `SHA256:${createHash('sha256').update(spki).digest('base64')}`
  return {
    keyid,
    privateKey,
    keys: { keys: [{ expires: null, keyid, keytype: 'ecdsa-sha2-nistp256', scheme: 'ecdsa-sha2-nistp256', key: spki.toString('base64') }] },
  }
}

export interface ScriptedPackument {
  readonly path: string
  readonly document: Record<string, unknown>
  /** The served bytes, exactly. */
  readonly body: string
}

/** The registry path of a package document: a scoped name as `@scope%2fname`, as the proxy asks for it. */
export function documentPath(name: string): string {
  return name.startsWith('@') ? `/${name.replace('/', '%2f')}` : `/${name}`
}

/** Scripts `versions` (grouped by name) onto `upstream`; returns each package's document as served. */
export async function scriptRegistry(upstream: MisbehavingUpstream, versions: readonly FixtureVersion[], signer?: RegistrySigner): Promise<Map<string, ScriptedPackument>> {
  const dir = await mkdtemp(join(tmpdir(), 'fixture-registry-'))
  const documents = new Map<string, Record<string, unknown>>()
  try {
    for (const v of versions) {
      const base = v.name.split('/').pop() as string
      const pkgDir = join(dir, `${base}-${v.version}`, 'package')
      await mkdir(pkgDir, { recursive: true })
      const manifest = { name: v.name, version: v.version, license: 'MIT', ...(v.dependencies === undefined ? {} : { dependencies: v.dependencies }) }
      await writeFile(join(pkgDir, 'package.json'), JSON.stringify(manifest, null, 2))
      await writeFile(join(pkgDir, 'index.js'), `module.exports = ${JSON.stringify(`${v.name}@${v.version}`)}\n`)
      const tgz = join(dir, `${base}-${v.version}.tgz`)
      await run('tar', ['-czf', tgz, '-C', join(dir, `${base}-${v.version}`), 'package'])
      const bytes = await readFile(tgz)
      const integrity = `sha512-${createHash('sha512').update(bytes).digest('base64')}`
      const tarballPath = `${documentPath(v.name)}/-/${base}-${v.version}.tgz`
      upstream.script(tarballPath, { kind: 'respond', headers: { 'content-type': 'application/octet-stream' }, body: bytes })
      const dist: Record<string, unknown> = {
        tarball: upstream.url(tarballPath),
        integrity,
        shasum: createHash('sha1').update(bytes).digest('hex'),
      }
      if (signer !== undefined) {
        dist['signatures'] = [{ keyid: signer.keyid, sig: sign('sha256', Buffer.from(`${v.name}@${v.version}:${integrity}`), signer.privateKey).toString('base64') }]
      }
      if (v.attestations !== undefined) {
        const path = `/-/npm/v1/attestations/${v.name}@${v.version}`
        dist['attestations'] = { url: upstream.url(path), provenance: { predicateType: 'https://slsa.dev/provenance/v1' } }
        upstream.script(path, { kind: 'respond', body: JSON.stringify(v.attestations) })
      }
      let doc = documents.get(v.name)
      if (doc === undefined) {
        doc = { name: v.name, 'dist-tags': {}, versions: {}, time: { created: '2020-01-01T00:00:00.000Z', modified: '2020-01-02T00:00:00.000Z' } }
        documents.set(v.name, doc)
      }
      ;(doc['versions'] as Record<string, unknown>)[v.version] = { ...manifest, dist }
      ;(doc['time'] as Record<string, string>)[v.version] = '2020-01-01T00:00:00.000Z'
      ;(doc['dist-tags'] as Record<string, string>)['latest'] = v.version
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
  if (signer !== undefined) upstream.script('/-/npm/v1/keys', { kind: 'respond', body: JSON.stringify(signer.keys) })
  const out = new Map<string, ScriptedPackument>()
  for (const [name, document] of documents) {
    const body = JSON.stringify(document)
    upstream.script(documentPath(name), { kind: 'respond', body })
    out.set(name, { path: documentPath(name), document, body })
  }
  return out
}
