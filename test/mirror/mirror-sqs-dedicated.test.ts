/**
 * `service mirror` on SQS, end to end with real peers only (run `npm run
 * build` first: the role runs from dist/): local-aws-sqs with a redrive
 * policy, Verdaccio as private upstream and mirror target, a public
 * Verdaccio over https, the real npm CLI. The proxy (in this process)
 * enqueues to SQS after serving; the dedicated worker (a child process)
 * consumes, mirrors, and answers its probes on its own server port, with
 * `/livez` carrying the worker's `lastPoll`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { request } from 'undici'
import YAML from 'yaml'
import { MIRROR_LISTENING, MIRROR_QUEUE_NO_REDRIVE, MIRROR_WORKER_STARTED } from '../../server/roles/mirror.js'
import { MIRROR_JOB_MIRRORED } from '../../engine/mirror/mirror-worker.js'
import { npmInstall } from '../clients/npm-client.js'
import { createClientWorkspace } from '../clients/workspace.js'
import { startTestProxy } from '../helpers/proxy.js'
import { freePort } from '../helpers/ports.js'
import { runService } from '../helpers/service-process.js'
import { publishFixture } from '../peers/publish-fixture.js'
import { startSqs } from '../../bench/peers/sqs.js'
import { startVerdaccio } from '../../bench/peers/verdaccio.js'
import { waitFor } from './wait-for.js'

const sqs = await startSqs({ maxReceiveCount: 3 })
const [priv, pub] = await Promise.all([startVerdaccio({ role: 'private' }), startVerdaccio({ role: 'public' })])
t.teardown(() => Promise.all([sqs.stop(), priv.stop(), pub.stop()]))
await publishFixture(pub, { name: 'sqs-mirrored', version: '1.0.0' })
const token = await priv.publisherToken()

// The SDK's default credential chain reads these, in this process (the proxy) and in the worker's.
const awsEnv = { AWS_ACCESS_KEY_ID: sqs.accessKeyId, AWS_SECRET_ACCESS_KEY: sqs.secretAccessKey, AWS_REGION: sqs.region }
Object.assign(process.env, awsEnv)

const mounts = {
  js: {
    upstreams: { private: { url: priv.url }, public: { url: pub.url, caFile: pub.caFile, allowInternalRanges: ['127.0.0.0/8'] } },
    mirror: { target: priv.url, token },
    rules: [{ rule: 'AllowIfOlderThan', seconds: 0 }],
  },
}
const queue = { kind: 'sqs', url: sqs.queueUrl, region: sqs.region, endpoint: sqs.endpoint }
// A dedicated worker's success reaches this proxy only through a shared cache backend; without one the proxy would keep
// sending the version's downloads to the public leg for cache.privateMissSeconds (docs/cache.md). Off here: this test is about the mirror.
const proxy = await startTestProxy(t, { document: { mounts, queue, cache: { privateMissSeconds: 0 } } })

const dir = await mkdtemp(join(tmpdir(), 'mirror-role-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))
const port = await freePort()
const configFile = join(dir, 'config.yaml')
await writeFile(configFile, YAML.stringify({
  server: { host: '127.0.0.1', port, baseUrl: proxy.url },
  runtime: { cores: 1 },
  mounts,
  queue,
}))
const worker = runService(t, ['mirror', '--config', configFile], awsEnv)
await worker.waitForOutput(MIRROR_LISTENING, 60_000)

async function probe(path: string): Promise<{ status: number, body: Record<string, unknown> }> {
  const res = await request(`http://127.0.0.1:${port}${path}`)
  return { status: res.statusCode, body: await res.body.json() as Record<string, unknown> }
}

t.test('the dedicated worker boots on SQS: budget above the redrive policy, probes on its port', async (t) => {
  t.match(worker.stdout(), MIRROR_WORKER_STARTED)
  t.match(worker.stdout(), /"receiveBudget":4/, 'one above the redrive maxReceiveCount of 3')
  t.notMatch(worker.stdout(), MIRROR_QUEUE_NO_REDRIVE)
  await waitFor(async () => (await probe('/livez')).body['lastPoll'] !== null, 'a successful poll is reported')
  const live = await probe('/livez')
  t.equal(live.status, 200)
  t.match(live.body, { status: 'ok', lastPoll: /^\d{4}-\d{2}-\d{2}T/ })
  t.equal((await probe('/readyz')).status, 200)
  t.equal((await request(`http://127.0.0.1:${port}/js/anything`)).statusCode, 404, 'the worker serves no routes')
})

t.test('npm install through the proxy; the worker mirrors over SQS; the next install comes from the private leg', async (t) => {
  const first = await createClientWorkspace({ 'sqs-mirrored': '1.0.0' })
  t.teardown(() => first.remove())
  await npmInstall(first, { registry: `${proxy.url}/js/` })
  await waitFor(() => worker.stdout().includes(MIRROR_JOB_MIRRORED), 'the worker mirrored the version')
  const res = await request(`${priv.origin}/sqs-mirrored`)
  const doc = await res.body.json() as { versions?: Record<string, { dist?: { integrity?: string } }> }
  const pubDoc = await (await request(`${pub.origin}/sqs-mirrored`, { dispatcher: pub.dispatcher })).body.json() as typeof doc
  t.equal(doc.versions?.['1.0.0']?.dist?.integrity, pubDoc.versions?.['1.0.0']?.dist?.integrity, 'the same integrity on the target')

  const relays = () => (proxy.role.metrics()['service.artifact'] as { relays: Record<'private' | 'public', Record<string, number>> }).relays
  const second = await createClientWorkspace({ 'sqs-mirrored': '1.0.0' })
  t.teardown(() => second.remove())
  await npmInstall(second, { registry: `${proxy.url}/js/` })
  t.equal(relays().private['delivered'], 1, 'served by the private leg')
  t.equal(relays().public['delivered'], 1, 'the public leg served only the first install')
  const enqueue = proxy.role.metrics()['service.mirror.enqueue'] as { sent: number, dropped: number }
  t.match(enqueue, { sent: 1, dropped: 0 })
})

t.test('SIGTERM drains the worker and exits 0', async (t) => {
  worker.child.kill('SIGTERM')
  const exit = await worker.exited
  t.same(exit, { code: 0, signal: null })
})
