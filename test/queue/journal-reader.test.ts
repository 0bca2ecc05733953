/**
 * The streaming journal reader: lines split across reads, multi-byte
 * characters split across reads, over-long lines skipped with their head,
 * and the offset where a torn tail starts.
 */
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { HEAD_BYTES, scanJournal } from '../../engine/queue/journal-reader.js'

async function scan(t: Test, content: string | Buffer, maxLineBytes: number): Promise<{ lines: string[], overLong: Array<[string, number]>, completeBytes: number, totalBytes: number }> {
  const root = await mkdtemp(join(tmpdir(), 'journal-reader-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  const path = join(root, 'journal')
  await writeFile(path, content)
  const handle = await open(path, 'r')
  t.teardown(() => handle.close())
  const lines: string[] = []
  const overLong: Array<[string, number]> = []
  const result = await scanJournal(handle, maxLineBytes, { line: (l) => lines.push(l), overLong: (h, b) => overLong.push([h, b]) })
  return { lines, overLong, ...result }
}

t.test('lines longer than one read, and characters split between reads, arrive whole', async (t) => {
  const long = 'é'.repeat(200_000) // 400,000 bytes: crosses the 256 KiB read on an odd byte
  const content = `a\n${long}\nb\n`
  const result = await scan(t, content, 1_000_000)
  t.same(result.lines.map((l) => l.length), [1, 200_000, 1])
  t.equal(result.lines[1], long)
  t.equal(result.completeBytes, Buffer.byteLength(content))
  t.same(result.overLong, [])
})

t.test('an over-long line is skipped, its head kept, its length counted, across reads', async (t) => {
  const huge = '{"op":"send","id":"big"' + 'x'.repeat(700_000) + '}'
  const content = `first\n${huge}\nlast\n`
  const result = await scan(t, content, 1000)
  t.same(result.lines, ['first', 'last'])
  t.equal(result.overLong.length, 1)
  t.equal(result.overLong[0]?.[0], huge.slice(0, HEAD_BYTES))
  t.equal(result.overLong[0]?.[1], huge.length)
})

t.test('a torn tail is not a line; completeBytes says where it starts', async (t) => {
  const result = await scan(t, 'one\ntwo\nthr', 100)
  t.same(result.lines, ['one', 'two'])
  t.equal(result.completeBytes, 8)
  t.equal(result.totalBytes, 11)
  const torn = await scan(t, `one\n${'y'.repeat(5000)}`, 100)
  t.same(torn.overLong, [], 'an over-long torn tail is not reported either')
  t.equal(torn.completeBytes, 4)
})

t.test('empty lines are skipped; an empty file is empty', async (t) => {
  t.same((await scan(t, '\n\na\n\n', 10)).lines, ['a'])
  t.match(await scan(t, '', 10), { lines: [], completeBytes: 0, totalBytes: 0 })
})
