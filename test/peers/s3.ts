/**
 * A real S3 peer for tests: s3rver 3.7.1 started from code on 127.0.0.1,
 * port 0, in its own temp folder, with one bucket (PEERS.md, "Object store").
 * s3rver accepts only the credentials S3RVER / S3RVER and path-style
 * addressing; clients must also set the checksum options of
 * engine/store/s3-object-store.ts's createS3Client.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
// s3rver ships no types; its constructor, run() and close() are all we use.
// @ts-expect-error no declaration file for s3rver
import S3rver from 's3rver'

export interface S3Peer {
  readonly endpoint: string
  readonly bucket: string
  readonly region: string
  readonly accessKeyId: string
  readonly secretAccessKey: string
  stop(): Promise<void>
}

interface S3rverInstance {
  run(): Promise<AddressInfo>
  close(): Promise<void>
}

export async function startS3(bucket = 'test-bucket'): Promise<S3Peer> {
  const directory = await mkdtemp(join(tmpdir(), 'proxy-s3rver-'))
  const server = new (S3rver as new (options: object) => S3rverInstance)({
    address: '127.0.0.1', port: 0, directory, silent: true, configureBuckets: [{ name: bucket }],
  })
  let address: AddressInfo
  try {
    address = await server.run()
  } catch (error) {
    await rm(directory, { recursive: true, force: true })
    throw error
  }
  let stopped = false
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    bucket,
    region: 'us-east-1',
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    async stop() {
      if (stopped) return
      stopped = true
      await server.close().catch(() => {})
      await rm(directory, { recursive: true, force: true })
    },
  }
}
