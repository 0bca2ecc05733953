import t from 'tap'
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { startS3 } from '../peers/s3.js'

t.test('S3 peer: put, head and get an object with its metadata', async (t) => {
  const s3 = await startS3()
  t.teardown(() => s3.stop())
  // Path-style and WHEN_REQUIRED checksums, or s3rver stores the aws-chunked framing (PEERS.md).
  const client = new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  })
  t.teardown(() => client.destroy())
  t.match(s3.endpoint, /^http:\/\/127\.0\.0\.1:\d+$/)

  const body = Buffer.from('{"name":"left-pad"}')
  const key = 'js/left-pad/-/left-pad-1.3.0.tgz'
  const put = await client.send(new PutObjectCommand({
    Bucket: s3.bucket, Key: key, Body: body, ContentType: 'application/octet-stream',
    Metadata: { integrity: 'sha512-abc', 'published-at': '2024-01-01T00:00:00.000Z' },
  }))
  t.match(put.ETag, /^"[0-9a-f]{32}"$/)

  const head = await client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key }))
  t.equal(head.ContentLength, body.length)
  t.equal(head.ETag, put.ETag)
  t.same(head.Metadata, { integrity: 'sha512-abc', 'published-at': '2024-01-01T00:00:00.000Z' })

  const got = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }))
  t.same(Buffer.from(await got.Body!.transformToByteArray()), body, 'stored byte for byte')
  t.equal(got.ContentType, 'application/octet-stream')
  t.same(got.Metadata, head.Metadata)

  // A matching conditional request surfaces as an error with status 304 (PEERS.md).
  const status = await client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key, IfNoneMatch: put.ETag! })).then(
    () => 200,
    (error: { $metadata?: { httpStatusCode?: number } }) => error.$metadata?.httpStatusCode,
  )
  t.equal(status, 304)
})
