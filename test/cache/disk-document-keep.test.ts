/**
 * The kept documents' folder (engine/cache/disk-document-keep.ts): a
 * document comes back whole with its validators after the folder is opened
 * again; a short or altered file, or one under another key, is discarded
 * and counted, never returned; temporary files a crash left are deleted at
 * open; the byte bound holds (least recently used first, an oversized
 * document not kept); a second owner of the folder keeps nothing; and
 * readThroughKeep turns a full read into a conditional one.
 */
import { mkdtemp, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { DiskDocumentKeep, WARM_FOLDER_UNAVAILABLE } from '../../engine/cache/disk-document-keep.js'
import { readThroughKeep, type DocumentRef, type KeptDocument } from '../../engine/cache/document-keep.js'
import type { ChargedFetch } from '../../engine/listing/charged-fetch.js'
import type { DocumentValidators } from '../../engine/upstream/upstream-client.js'
import { RecordingLogger } from '../doubles/recording-logger.js'

const ref = (packageName: string): DocumentRef => ({ ecosystem: 'js', packageName, side: 'public', upstream: 'https://public.test/' })
const doc = (text: string, etag = '"e1"'): KeptDocument => ({ etag, lastModified: undefined, contentType: 'application/json', chunks: [Buffer.from(text.slice(0, 3)), Buffer.from(text.slice(3))] })
const noCharge = (): undefined => undefined

async function folder(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'disk-keep-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

async function open(t: Test, dir: string, maxBytes = 1024 * 1024, logger = new RecordingLogger()): Promise<DiskDocumentKeep> {
  const keep = await DiskDocumentKeep.open({ dir, maxBytes, logger })
  t.teardown(() => keep.close())
  return keep
}

/** Waits for the writes behind `keep()` (close waits for them, and lets the folder go). */
async function settle(keep: DiskDocumentKeep): Promise<void> {
  await keep.close()
}

const text = (d: KeptDocument | undefined): string | undefined => d === undefined ? undefined : Buffer.concat(d.chunks.map((c) => Buffer.from(c))).toString('utf8')

t.test('a kept document comes back whole after the folder is opened again', async (t) => {
  const dir = await folder(t)
  const first = await open(t, dir)
  first.keep(ref('a'), doc('{"name":"a"}'))
  first.keep(ref('b'), { ...doc('{"name":"b"}'), etag: undefined })
  await settle(first)
  t.equal(first.counters.written, 1, 'a document without validators is not kept')
  const charged: number[] = []
  const second = await open(t, dir)
  const got = await second.get(ref('a'), (bytes) => { charged.push(bytes); return undefined })
  t.equal(text(got), '{"name":"a"}')
  t.equal(got?.etag, '"e1"')
  t.equal(got?.contentType, 'application/json')
  t.ok((charged[0] ?? 0) >= 12, 'charged its size before it was read')
  t.equal(await second.get(ref('b'), noCharge), undefined)
  t.equal(await second.get({ ...ref('a'), upstream: 'https://other.test/' }, noCharge), undefined, 'another upstream\'s document is another key')
})

t.test('a short, altered or misplaced file is discarded and counted, never returned', async (t) => {
  const dir = await folder(t)
  const first = await open(t, dir)
  for (const name of ['short', 'altered', 'moved', 'kept']) first.keep(ref(name), doc(`{"name":"${name}","pad":"${'x'.repeat(100)}"}`))
  await settle(first)
  const files = new Map<string, string>()
  for (const file of (await readdir(dir)).filter((f) => f.endsWith('.doc'))) {
    const bytes = await readFile(join(dir, file))
    const name = /"key":"js\\u0000public\\u0000https:\/\/public\.test\/\\u0000([a-z]+)"/.exec(bytes.toString('utf8'))?.[1]
    if (name !== undefined) files.set(name, file)
  }
  t.equal(files.size, 4)
  await truncate(join(dir, files.get('short') as string), (await stat(join(dir, files.get('short') as string))).size - 10)
  const altered = await readFile(join(dir, files.get('altered') as string))
  altered[altered.length - 3] = (altered[altered.length - 3] as number) ^ 1
  await writeFile(join(dir, files.get('altered') as string), altered)
  // Another key's whole, valid file under this key's name.
  await writeFile(join(dir, files.get('moved') as string), await readFile(join(dir, files.get('kept') as string)))
  await writeFile(join(dir, 'leftover.doc.123.abc.tmp'), 'half')

  const second = await open(t, dir)
  t.notOk((await readdir(dir)).some((f) => f.endsWith('.tmp')), 'a temporary file a crash left is deleted at open')
  for (const name of ['short', 'altered', 'moved']) t.equal(await second.get(ref(name), noCharge), undefined, `${name}: not returned`)
  t.equal(second.counters.corrupt, 3)
  t.match(text(await second.get(ref('kept'), noCharge)), /"name":"kept"/)
  await sleep(50)
  t.equal((await readdir(dir)).filter((f) => f.endsWith('.doc')).length, 1, 'the discarded files are deleted')
})

t.test('the byte bound holds, least recently used first; an oversized document is not kept', async (t) => {
  const dir = await folder(t)
  const body = (name: string): string => `{"name":"${name}","pad":"${'x'.repeat(400)}"}`
  const keep = await DiskDocumentKeep.open({ dir, maxBytes: 8 * 600, logger: new RecordingLogger() })
  for (let i = 0; i < 6; i++) {
    keep.keep(ref(`p${i}`), doc(body(`p${i}`)))
    await sleep(20)
  }
  await sleep(200)
  t.ok(await keep.get(ref('p0'), noCharge), 'p0 used: now the most recent')
  for (let i = 6; i < 12; i++) {
    keep.keep(ref(`p${i}`), doc(body(`p${i}`)))
    await sleep(20)
  }
  keep.keep(ref('huge'), doc(`{"pad":"${'x'.repeat(700)}"}`))
  await settle(keep)
  const sizes = await Promise.all((await readdir(dir)).filter((f) => f.endsWith('.doc')).map(async (f) => (await stat(join(dir, f))).size))
  t.ok(sizes.reduce((a, b) => a + b, 0) <= 8 * 600, `within the bound (${sizes.reduce((a, b) => a + b, 0)})`)
  t.ok(keep.counters.evicted > 0, 'evictions counted')
  t.equal(keep.counters.failed, 1, 'the document over an eighth of the bound was not kept')
  const again = await open(t, dir, 8 * 600)
  t.ok(await again.get(ref('p0'), noCharge), 'the recently used one survived')
  t.equal(await again.get(ref('p1'), noCharge), undefined, 'the least recently used went first')
})

t.test('a second owner of the folder keeps nothing', async (t) => {
  const dir = await folder(t)
  const owner = await open(t, dir)
  const logger = new RecordingLogger()
  const second = await DiskDocumentKeep.open({ dir, maxBytes: 1024 * 1024, logger })
  t.teardown(() => second.close())
  t.equal(logger.find(WARM_FOLDER_UNAVAILABLE).length, 1, 'warned')
  second.keep(ref('a'), doc('{"name":"a"}'))
  await second.close()
  t.equal(second.counters.written, 0)
  t.equal(owner.entries, 0)
})

t.test('readThroughKeep: a kept document makes the read conditional, a 304 serves the kept body', async (t) => {
  const dir = await folder(t)
  const keep = await open(t, dir)
  const asked: (DocumentValidators | undefined)[] = []
  let answer: ChargedFetch = { kind: 'document', chunks: [Buffer.from('{"v":1}')], etag: '"v1"', lastModified: undefined, contentType: undefined }
  const ask = async (validators?: DocumentValidators): Promise<ChargedFetch> => { asked.push(validators); return answer }
  const o = { keep, ref: ref('a'), charge: noCharge, ask }
  t.equal((await readThroughKeep(o)).kind, 'document')
  t.same(asked, [undefined], 'nothing kept: a full read')
  for (let i = 0; i < 50 && keep.counters.written === 0; i++) await sleep(20)
  answer = { kind: 'not-modified' }
  const served = await readThroughKeep(o)
  t.same(asked[1], { etag: '"v1"' }, 'then a conditional read with the kept validators')
  t.equal(served.kind === 'document' ? Buffer.concat(served.chunks).toString() : served.kind, '{"v":1}', 'the 304 answered with the kept body')
  t.equal(keep.counters.revalidated, 1)
  answer = { kind: 'miss' }
  t.equal((await readThroughKeep(o)).kind, 'miss', 'a miss is the upstream\'s answer')
  t.equal(await keep.get(ref('a'), noCharge), undefined, 'and the kept document is dropped')
  answer = { kind: 'not-modified' }
  t.equal((await readThroughKeep(o, { etag: '"held"' })).kind, 'not-modified', 'a held answer\'s revalidation keeps its own validators')
  t.same(asked.at(-1), { etag: '"held"' })
})
