/**
 * Publish documents shaped as libnpmpublish writes them (the packument root,
 * one version manifest, its tarball in base64 under `<name>-<version>.tgz`),
 * for the publish tests. The tarball bytes are arbitrary: the proxy checks
 * length and digests, never the archive.
 */
import { createHash } from 'node:crypto'

export interface PublishDocumentOptions {
  readonly name: string
  readonly version?: string
  readonly tarball?: Uint8Array
}

export function publishDocument(options: PublishDocumentOptions): Record<string, any> {
  const { name } = options
  const version = options.version ?? '1.0.0'
  const tarball = Buffer.from(options.tarball ?? Buffer.from(`tarball of ${name}@${version}`))
  const file = `${name}-${version}.tgz`
  return {
    _id: name,
    name,
    description: 'a fixture',
    'dist-tags': { latest: version },
    versions: {
      [version]: {
        name,
        version,
        _id: `${name}@${version}`,
        dist: {
          integrity: `sha512-${createHash('sha512').update(tarball).digest('base64')}`,
          shasum: createHash('sha1').update(tarball).digest('hex'),
          tarball: `http://127.0.0.1/js/${name}/-/${file}`,
        },
      },
    },
    access: null,
    _attachments: {
      [file]: { content_type: 'application/octet-stream', data: tarball.toString('base64'), length: tarball.byteLength },
    },
  }
}

export function bytesOf(document: unknown): Uint8Array {
  return Buffer.from(JSON.stringify(document))
}
