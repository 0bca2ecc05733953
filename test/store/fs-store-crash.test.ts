/**
 * A put killed with SIGKILL mid-write never shows: readers keep seeing the
 * previous object, whole; the debris is invisible and swept on a later open.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { ManualClock } from '../doubles/manual-clock.js'
import { FilesystemObjectStore } from '../../engine/store/filesystem-object-store.js'

const CHILD = fileURLToPath(new URL('./put-interrupted.child.ts', import.meta.url))

/** Runs a .ts child with the same TypeScript loader tap gave this process. */
function spawnTsChild(script: string, env: Record<string, string>) {
  const loader = process.execArgv.filter((a) => a.includes('@tapjs/typescript'))
  const { NODE_OPTIONS: _drop, ...inherited } = process.env
  return spawn(process.execPath, [...loader, script], { env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  let text = ''
  for await (const chunk of stream) text += String(chunk)
  return text
}

t.test('a put killed mid-write leaves the previous object whole and visible', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'proxy-fs-crash-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  const clock = new ManualClock(Date.now()) // the sweep compares the clock with real file mtimes
  const store = await FilesystemObjectStore.open({ root, clock })
  const original = await store.put('artifact', Buffer.from('the original artifact'), { generation: 'original' })

  const child = spawnTsChild(CHILD, { STORE_CRASH_ROOT: root })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)))
  let said = ''
  for await (const chunk of child.stdout) {
    said += String(chunk)
    if (said.includes('writing')) break
  }
  t.ok(said.includes('writing'), 'the child was mid-write')
  child.kill('SIGKILL')
  t.equal(await exited, 'SIGKILL')

  const names = await readdir(root)
  t.equal(names.filter((n) => n.endsWith('.body')).length, 2, 'the interrupted body is on disk beside the original')

  const head = await store.head('artifact')
  t.match(head, { notModified: false, etag: original.etag, metadata: { generation: 'original' } })
  const got = await store.get('artifact')
  t.equal(await readAll(got!.stream), 'the original artifact')
  const listed: string[] = []
  for await (const key of store.list('')) listed.push(key)
  t.same(listed, ['artifact'], 'debris is never listed')

  // A later open sweeps debris older than the grace period, and only that.
  clock.advance(10_000)
  await FilesystemObjectStore.open({ root, clock, orphanGraceMs: 1000 })
  t.equal((await readdir(root)).filter((n) => n.endsWith('.body')).length, 1, 'the orphan body was swept')
  t.equal(await readAll((await store.get('artifact'))!.stream), 'the original artifact')
})

t.test('a sidecar left in its temp file (crash before the rename) is invisible', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'proxy-fs-crash-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  const clock = new ManualClock(Date.now()) // the sweep compares the clock with real file mtimes
  const store = await FilesystemObjectStore.open({ root, clock })
  await writeFile(join(root, 'ghost.0123456789abcdef.body'), 'ghost body')
  await writeFile(join(root, '.tmp-0123456789abcdef'),
    JSON.stringify({ etag: '"x"', publishedAt: 1, size: 10, metadata: {}, body: 'ghost.0123456789abcdef.body' }))
  t.equal(await store.head('ghost'), undefined)
  t.equal(await store.get('ghost'), undefined)
  const listed: string[] = []
  for await (const key of store.list('')) listed.push(key)
  t.same(listed, [])

  // Young debris may belong to a live writer in another process: kept.
  await FilesystemObjectStore.open({ root, clock, orphanGraceMs: 3_600_000 })
  t.equal((await readdir(root)).length, 2, 'young debris is kept')
  clock.advance(7_200_000)
  await FilesystemObjectStore.open({ root, clock, orphanGraceMs: 3_600_000 })
  t.same(await readdir(root), [], 'old debris is swept')
})

t.test('a reader racing a replacing put sees one whole object or the other', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'proxy-fs-race-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  const store = await FilesystemObjectStore.open({ root })
  await store.put('k', Buffer.from('generation 0'), { g: '0' })
  const writes = (async () => {
    for (let g = 1; g <= 40; g++) await store.put('k', Buffer.from(`generation ${g}`), { g: String(g) })
  })()
  let reads = 0
  let done = false
  void writes.then(() => { done = true })
  while (!done) {
    const got = await store.get('k')
    if (got === undefined) throw new Error('the object vanished during replacement')
    const body = await readAll(got.stream)
    if (body !== `generation ${got.metadata['g']}`) t.fail(`mismatched body ${body} for metadata ${got.metadata['g']}`)
    reads++
  }
  await writes
  t.ok(reads > 0, `every one of ${reads} reads saw a matching body and sidecar`)
})
