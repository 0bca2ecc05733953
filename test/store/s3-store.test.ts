import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { isServiceError } from '../../engine/errors.js'
import type { ServiceError } from '../../engine/errors.js'
import { createS3Client, S3ObjectStore } from '../../engine/store/s3-object-store.js'
import { startS3 } from '../peers/s3.js'
import { objectStoreSuite } from './store.suite.js'

t.test('the shared object store suite, S3 (s3rver)', async (t) => {
  const peer = await startS3()
  t.teardown(() => peer.stop())
  const client = createS3Client({
    region: peer.region, endpoint: peer.endpoint,
    credentials: { accessKeyId: peer.accessKeyId, secretAccessKey: peer.secretAccessKey },
  })
  t.teardown(() => client.destroy())
  let run = 0
  objectStoreSuite(t, async () => {
    // One bucket, a fresh key prefix per case, so cases never see each other's objects.
    const store = new S3ObjectStore({ client, bucket: peer.bucket, prefix: `case-${++run}/` })
    return {
      store,
      // LastModified is the server's clock at one-second resolution; it cannot be injected.
      tick: () => sleep(1100),
      close: async () => {
        for await (const key of store.list('')) await store.delete(key)
      },
    }
  }, { enforcesConditions: false })
})

t.test('S3 failures are STORE_FAILURE, with the operation named', async (t) => {
  const peer = await startS3()
  t.teardown(() => peer.stop())
  const client = createS3Client({
    region: peer.region, endpoint: peer.endpoint,
    credentials: { accessKeyId: 'NOT-S3RVER', secretAccessKey: 'wrong' },
  })
  t.teardown(() => client.destroy())
  const store = new S3ObjectStore({ client, bucket: peer.bucket })
  try {
    await store.put('k', Buffer.from('x'), {})
    t.fail('refused credentials must fail the put')
  } catch (error) {
    t.ok(isServiceError(error, 'STORE_FAILURE'))
    t.match((error as ServiceError).data, { store: 's3', operation: 'put', status: 403 })
  }
})

t.test('S3ObjectStore guards its options', async (t) => {
  const client = createS3Client({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9' })
  t.teardown(() => client.destroy())
  t.throws(() => new S3ObjectStore({ client, bucket: '' }), TypeError)
  t.throws(() => new S3ObjectStore({ client, bucket: 'b', partBytes: 1024 }), TypeError)
  try {
    new S3ObjectStore({ client, bucket: 'b', prefix: '../up/' })
    t.fail('a traversing prefix must be refused')
  } catch (error) {
    t.ok(isServiceError(error, 'STORE_FAILURE'), 'a traversing prefix is refused')
  }
})
