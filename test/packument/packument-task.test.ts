import t from 'tap'
import { Piscina } from 'piscina'
import { isServiceError, ServiceError } from '../../engine/errors.js'
import { runPackumentPipeline } from '../../engine/packument/pipeline.js'
import { runPackumentTask, type PackumentJob } from '../../workers/packument-client.js'
import { runCompressTask } from '../../workers/compress-client.js'
import { gunzipSync } from 'node:zlib'
import { admitWhen, chunked, packument, readPackument, utf8 } from './helpers.js'

const gate = (options: unknown) => ({ module: new URL('./fixtures/gate-deny-list.ts', import.meta.url).href, options })

const pool = new Piscina({
  filename: new URL('../../workers/packument-task.ts', import.meta.url).href,
  minThreads: 1,
  maxThreads: 1,
  idleTimeout: 1000,
})
t.teardown(() => pool.destroy())

/** Chunks that each own their whole ArrayBuffer, so they move without a copy. */
function owned(bytes: Uint8Array, size: number): Uint8Array[] {
  return chunked(bytes, size).map((c) => new Uint8Array(c))
}

function job(extra: Partial<PackumentJob>): PackumentJob {
  return {
    packageName: 'p',
    baseUrl: 'http://proxy.test',
    abbreviated: false,
    now: Date.parse('2026-01-01T00:00:00Z'),
    gate: gate({ deny: ['1.1.0'] }),
    charge: async () => {},
    ...extra,
  }
}

t.test('a worker renders what the in-process pipeline renders, and the chunks move', async (t) => {
  const bytes = readPackument('express.json')
  const publicChunks = owned(bytes, 65536)
  const charges: Array<[number, number]> = []
  const outcome = await runPackumentTask(pool, job({
    packageName: 'express',
    publicChunks,
    gate: gate({ deny: ['4.17.1', '5.0.0'] }),
    charge: async (bytes, basis) => { charges.push([bytes, basis]) },
  }))
  t.ok(publicChunks.every((c) => c.byteLength === 0 && c.buffer.byteLength === 0), 'the sender\'s buffers are detached (transferred, not copied)')
  const local = runPackumentPipeline(
    { packageName: 'express', baseUrl: 'http://proxy.test', abbreviated: false, decide: admitWhen((f) => f.version !== '4.17.1' && f.version !== '5.0.0') },
    undefined,
    chunked(bytes, 65536),
  )
  t.same(Buffer.from(outcome.body!), Buffer.from(local.body!), 'the same bytes')
  t.equal(outcome.etag, local.etag)
  t.ok(outcome.body!.buffer instanceof SharedArrayBuffer && outcome.body!.byteLength === outcome.body!.buffer.byteLength, 'the body is all of a shared buffer: it crossed without a copy')
  // Coded in another task, read in place: the shared body is neither copied nor detached.
  const coded = await runCompressTask(pool, outcome.body!, 'gzip')
  t.same(gunzipSync(coded), Buffer.from(local.body!), 'the coded answer decodes to the body')
  t.equal(outcome.body!.byteLength, local.body!.byteLength, 'the retained body is intact after coding')
  const inside = new Uint8Array(outcome.body!.buffer, 5, 100)
  t.same(gunzipSync(await runCompressTask(pool, inside, 'gzip')), Buffer.from(inside), 'a view inside a shared buffer codes only its own bytes')
  t.same(gunzipSync(await runCompressTask(pool, Buffer.from('not shared'), 'gzip')).toString(), 'not shared', 'a body that is not shared is copied, as before')
  t.same(outcome.counts, local.counts)
  t.equal(outcome.selected.length, local.selected.length)
  t.same(charges, [[bytes.length * 2, bytes.length]], 'one charge of 2.0 bytes per basis byte, before rendering')
})

t.test('a refused charge fails the task with the gate\'s code', async (t) => {
  const outcome = runPackumentTask(pool, job({
    publicChunks: owned(utf8(JSON.stringify(packument('p', ['1.0.0', '1.1.0']))), 16),
    charge: async () => { throw new ServiceError('GATE_PAUSE_TIMEOUT') },
  }))
  await outcome.then(() => t.fail('resolved'), (error: unknown) => {
    t.ok(isServiceError(error, 'GATE_PAUSE_TIMEOUT'), 'GATE_PAUSE_TIMEOUT')
  })
})

t.test('a charge function that throws at once is a refusal', async (t) => {
  await runPackumentTask(pool, job({
    publicChunks: [utf8(JSON.stringify(packument('p', ['1.0.0'])))],
    charge: () => { throw new ServiceError('GATE_SHED') },
  })).then(() => t.fail('resolved'), (error: unknown) => t.ok(isServiceError(error, 'GATE_SHED'), 'GATE_SHED'))
})

t.test('a gate module without createDecide is an internal error', async (t) => {
  await runPackumentTask(pool, job({
    publicChunks: [utf8(JSON.stringify(packument('p', ['1.0.0'])))],
    gate: { module: new URL('./helpers.ts', import.meta.url).href, options: {} },
  })).then(() => t.fail('resolved'), (error: unknown) => t.ok(isServiceError(error, 'INTERNAL'), 'INTERNAL'))
})

t.test('errors of the engine come back as ServiceErrors with their code', async (t) => {
  await runPackumentTask(pool, job({ publicChunks: [utf8('{"name":"p","versions":{')] })).then(
    () => t.fail('resolved'),
    (error: unknown) => t.ok(isServiceError(error, 'UPSTREAM_DECODE'), 'UPSTREAM_DECODE'),
  )
  await runPackumentTask(pool, job({
    publicChunks: [utf8(JSON.stringify(packument('p', ['1.0.0', '1.0.1', '1.0.2'])))],
    limits: { maxVersionCount: 2, maxArtifactCount: 100 },
  })).then(
    () => t.fail('resolved'),
    (error: unknown) => t.ok(isServiceError(error, 'STRUCTURE_LIMIT') && error.data?.['limit'] === 'maxVersionCount', 'STRUCTURE_LIMIT'),
  )
})

t.test('a withheld document carries its cause and observations, and charges nothing', async (t) => {
  let charged = false
  const outcome = await runPackumentTask(pool, job({
    privateChunks: undefined,
    publicChunks: [utf8(JSON.stringify(packument('p', ['1.0.0', '1.1.0'])))],
    gate: gate({ deny: ['1.0.0'], unavailable: ['1.1.0'] }),
    charge: async () => { charged = true },
  }))
  t.equal(outcome.body, undefined)
  t.same(outcome.withholding, { code: 'ADVISORY_UNAVAILABLE' })
  t.same(outcome.observations.map((o) => o.version), ['1.1.0'])
  t.equal(outcome.observations[0]!.decision.evidence[0], String(Date.parse('2026-01-01T00:00:00Z')), 'the gate saw the task\'s now')
  t.notOk(charged)
})

t.test('private and public documents merge in the worker', async (t) => {
  const outcome = await runPackumentTask(pool, job({
    abbreviated: true,
    privateChunks: [utf8(JSON.stringify(packument('p', ['0.1.0'])))],
    publicChunks: [utf8(JSON.stringify(packument('p', ['1.0.0', '1.1.0'])))],
  }))
  const doc = JSON.parse(Buffer.from(outcome.body!).toString('utf8'))
  t.same(Object.keys(doc.versions), ['0.1.0', '1.0.0'])
  t.equal(doc['dist-tags'].latest, '1.0.0')
  t.same(outcome.selected.map((s) => s.filename), ['p-1.0.0.tgz', 'p-1.1.0.tgz'], 'the withheld 1.1.0 stays selectable, so its tarball is refused by policy')
})

t.test('the upstream tags reach the worker, which derives the body\'s tag from them', async (t) => {
  const text = utf8(JSON.stringify(packument('p', ['1.0.0', '1.1.0'])))
  const outcome = await runPackumentTask(pool, job({ publicChunks: [new Uint8Array(text)], publicEtag: '"up-1"' }))
  const local = runPackumentPipeline(
    { packageName: 'p', baseUrl: 'http://proxy.test', abbreviated: false, decide: admitWhen((f) => f.version !== '1.1.0'), publicEtag: '"up-1"' },
    undefined,
    [text],
  )
  t.ok(outcome.etag?.startsWith('"d'), 'derived')
  t.equal(outcome.etag, local.etag, 'as the in-process pipeline derives it')
  t.same(Buffer.from(outcome.body!), Buffer.from(local.body!))
})
