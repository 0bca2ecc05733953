/**
 * Issue 12, "Must show": the dedicated `service mirror` (built dist/, run as
 * a child process) is killed with SIGKILL while its PUT to the mirror target
 * is in flight; a new worker gets the job again and completes it, and the
 * target holds the version exactly once, with the job's integrity.
 *
 * Real peers only: local-aws-sqs, Verdaccio as the mirror target, and the
 * test's own https server as the public registry, so the artifact (4 MiB of
 * random bytes) can be held half sent. The worker streams the artifact into
 * the publish body, so a held artifact keeps the PUT open: a byte-counting
 * TCP relay in front of Verdaccio shows the body flowing before the kill.
 *
 * Redelivery: the killed worker's receive set a 120 s window. Rather than
 * wait it out, the test ends it with ChangeMessageVisibility 0. It has no
 * receipt handle of its own (the dead worker had it): local-aws-sqs finds the
 * message by the MessageId its handles embed (base64 of a UUID and
 * `{date, MessageId, QueueName}`) and does not check the handle otherwise, so
 * a handle in that shape stands for the lost one. That call also adds one to
 * the receive count (PEERS.md), so the redrive policy here allows 10.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer as createHttpsServer } from 'node:https'
import { createConnection, createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ChangeMessageVisibilityCommand, GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs'
import t from 'tap'
import { request } from 'undici'
import YAML from 'yaml'
import { DEFAULT_WAIT_SECONDS } from '../../engine/mirror/mirror-consumer.js'
import { encodeMirrorJob, type MirrorJob } from '../../engine/mirror/mirror-job.js'
import { MIRROR_COLLISION, MIRROR_JOB_MIRRORED } from '../../engine/mirror/mirror-worker.js'
import { MIRROR_LISTENING } from '../../server/roles/mirror.js'
import { freePort } from '../helpers/ports.js'
import { runService } from '../helpers/service-process.js'
import { startSqs } from '../../bench/peers/sqs.js'
import { makeTestCa } from '../../bench/peers/tls.js'
import { startVerdaccio } from '../../bench/peers/verdaccio.js'
import { waitFor } from './wait-for.js'

const NAME = 'kill-mid-publish'
const VERSION = '1.0.0'
const FILENAME = `${NAME}-${VERSION}.tgz`
const artifact = randomBytes(4 * 1024 * 1024)
const integrity = `sha512-${createHash('sha512').update(artifact).digest('base64')}`
const shasum = createHash('sha1').update(artifact).digest('hex')

const [sqs, priv, ca] = await Promise.all([startSqs({ maxReceiveCount: 10 }), startVerdaccio({ role: 'private' }), makeTestCa()])
t.teardown(() => Promise.all([sqs.stop(), priv.stop(), ca.remove()]))
const token = await priv.publisherToken()

// The public registry: the packument at once; the artifact whole, or (while `hold` is set) its first MiB and then nothing.
let hold = true
const held = new Set<Socket>()
const publicServer = createHttpsServer({ key: ca.keyPem, cert: ca.certPem }, (req, res) => {
  const origin = `https://127.0.0.1:${(publicServer.address() as AddressInfo).port}`
  if (req.url === `/${NAME}`) {
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify({
      name: NAME,
      'dist-tags': { latest: VERSION },
      versions: { [VERSION]: { name: NAME, version: VERSION, dist: { tarball: `${origin}/${NAME}/-/${FILENAME}`, integrity, shasum } } },
      time: { created: '2020-01-01T00:00:00.000Z', [VERSION]: '2020-01-01T00:00:00.000Z' },
    }))
    return
  }
  if (req.url === `/${NAME}/-/${FILENAME}`) {
    res.setHeader('content-type', 'application/octet-stream')
    res.setHeader('content-length', artifact.length)
    if (!hold) {
      res.end(artifact)
      return
    }
    held.add(req.socket)
    res.write(artifact.subarray(0, 1024 * 1024))
    return
  }
  res.statusCode = 404
  res.end()
})
await new Promise<void>((resolve) => publicServer.listen(0, '127.0.0.1', resolve))
t.teardown(() => { for (const s of held) s.destroy(); publicServer.closeAllConnections(); return new Promise((resolve) => publicServer.close(resolve)) })
const publicUrl = `https://127.0.0.1:${(publicServer.address() as AddressInfo).port}/`

// Verdaccio behind a relay that counts the bytes the worker sends it.
const targetPort = Number(new URL(priv.origin).port)
let bytesToTarget = 0
const relaySockets = new Set<Socket>()
const relay = createTcpServer((client) => {
  const upstream = createConnection({ host: '127.0.0.1', port: targetPort })
  relaySockets.add(client)
  relaySockets.add(upstream)
  client.on('data', (chunk: Buffer) => { bytesToTarget += chunk.length })
  client.pipe(upstream).pipe(client)
  const end = (): void => { client.destroy(); upstream.destroy(); relaySockets.delete(client); relaySockets.delete(upstream) }
  client.on('error', end).on('close', end)
  upstream.on('error', end).on('close', end)
})
await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve))
t.teardown(() => { for (const s of relaySockets) s.destroy(); return new Promise((resolve) => relay.close(resolve)) })
const targetUrl = `http://127.0.0.1:${(relay.address() as AddressInfo).port}/`

const awsEnv = { AWS_ACCESS_KEY_ID: sqs.accessKeyId, AWS_SECRET_ACCESS_KEY: sqs.secretAccessKey, AWS_REGION: sqs.region }
const client = sqs.client()
const dir = await mkdtemp(join(tmpdir(), 'mirror-kill-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))
const port = await freePort()
const configFile = join(dir, 'config.yaml')
await writeFile(configFile, YAML.stringify({
  server: { host: '127.0.0.1', port, baseUrl: `http://127.0.0.1:${port}` },
  runtime: { cores: 1 },
  mounts: {
    js: {
      upstreams: { private: { url: targetUrl }, public: { url: publicUrl, caFile: ca.caFile, allowInternalRanges: ['127.0.0.0/8'] } },
      mirror: { target: targetUrl, token },
      rules: [{ rule: 'AllowIfOlderThan', seconds: 0 }],
    },
  },
  queue: { kind: 'sqs', url: sqs.queueUrl, region: sqs.region, endpoint: sqs.endpoint },
}))

const job: MirrorJob = {
  url: `${publicUrl}${NAME}/-/${FILENAME}`, package: NAME, version: VERSION, filename: FILENAME, integrity, shasum, enqueuedAt: new Date().toISOString(),
}

interface Packument { versions?: Record<string, { dist?: { integrity?: string, tarball?: string } }> }

async function targetPackument(): Promise<{ status: number, doc: Packument }> {
  const res = await request(`${priv.origin}/${NAME}`)
  const text = await res.body.text()
  return { status: res.statusCode, doc: res.statusCode === 200 ? JSON.parse(text) as Packument : {} }
}

async function queueDepth(): Promise<{ visible: number, inFlight: number }> {
  const out = await client.send(new GetQueueAttributesCommand({ QueueUrl: sqs.queueUrl, AttributeNames: ['All'] }))
  // local-aws-sqs counts in-flight messages in ApproximateNumberOfMessages too (real SQS does not).
  const inFlight = Number(out.Attributes?.['ApproximateNumberOfMessagesNotVisible'])
  return { visible: Number(out.Attributes?.['ApproximateNumberOfMessages']) - inFlight, inFlight }
}

t.test('SIGKILL mid-publish: the job is redelivered, completes, and the target holds the version once with its integrity', async (t) => {
  const sent = await client.send(new SendMessageCommand({ QueueUrl: sqs.queueUrl, MessageBody: encodeMirrorJob(job) }))
  const messageId = sent.MessageId ?? ''
  t.ok(messageId, 'the job is on the queue')

  const first = runService(t, ['mirror', '--config', configFile], awsEnv)
  await first.waitForOutput(MIRROR_LISTENING, 60_000)
  // A MiB of artifact is a third more of base64 publish body: well past any lookup or headers.
  await waitFor(() => bytesToTarget > 512 * 1024, 'the publish body is flowing to the target')
  first.child.kill('SIGKILL')
  t.same(await first.exited, { code: null, signal: 'SIGKILL' })
  t.notMatch(first.stdout(), MIRROR_JOB_MIRRORED, 'the first worker never finished the job')
  for (const s of relaySockets) s.destroy()
  t.equal((await targetPackument()).doc.versions?.[VERSION], undefined, 'the cut publish left nothing on the target')
  t.same(await queueDepth(), { visible: 0, inFlight: 1 }, 'the job is unacknowledged, in its window')

  // The public registry now serves the artifact whole; the dead worker's window ends now rather than in 120 s.
  hold = false
  for (const s of held) s.destroy()
  // The dead worker left a long poll open on the queue; the server keeps it until its wait ends and would take the
  // message again, for nobody, the moment it is visible (real SQS does the same with a dropped long poll). Let it end.
  await new Promise((resolve) => setTimeout(resolve, (DEFAULT_WAIT_SECONDS + 1) * 1000))
  const standIn = Buffer.from(randomUUID() + JSON.stringify({ date: Date.now(), MessageId: messageId, QueueName: sqs.queueName }), 'utf8').toString('base64')
  await client.send(new ChangeMessageVisibilityCommand({ QueueUrl: sqs.queueUrl, ReceiptHandle: standIn, VisibilityTimeout: 0 }))

  const second = runService(t, ['mirror', '--config', configFile], awsEnv)
  await second.waitForOutput(MIRROR_JOB_MIRRORED, 60_000)
  await waitFor(async () => { const d = await queueDepth(); return d.visible === 0 && d.inFlight === 0 }, 'the redelivered job is deleted')

  const { status, doc } = await targetPackument()
  t.equal(status, 200)
  t.same(Object.keys(doc.versions ?? {}), [VERSION], 'the version exactly once')
  t.equal(doc.versions?.[VERSION]?.dist?.integrity, integrity, "the job's integrity on the target")
  const tarball = await request(`${priv.origin}/${NAME}/-/${FILENAME}`)
  t.equal(tarball.statusCode, 200)
  const stored = Buffer.from(await tarball.body.arrayBuffer())
  t.equal(`sha512-${createHash('sha512').update(stored).digest('base64')}`, integrity, 'the stored bytes hash to the integrity')

  // The same job once more (a duplicate delivery): found present, never published again with other bytes.
  await client.send(new SendMessageCommand({ QueueUrl: sqs.queueUrl, MessageBody: encodeMirrorJob(job) }))
  await waitFor(async () => { const d = await queueDepth(); return d.visible === 0 && d.inFlight === 0 }, 'the duplicate is settled and deleted')
  t.equal(second.stdout().split(MIRROR_JOB_MIRRORED).length - 1, 1, 'published once')
  t.notMatch(second.stdout(), MIRROR_COLLISION)
  const again = await request(`${priv.origin}/${NAME}/-/${FILENAME}`)
  t.equal(createHash('sha512').update(Buffer.from(await again.body.arrayBuffer())).digest('base64'), integrity.slice('sha512-'.length), 'the same bytes after the duplicate')

  second.child.kill('SIGTERM')
  t.same(await second.exited, { code: 0, signal: null })
})
