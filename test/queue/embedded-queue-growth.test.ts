/**
 * Issue 12's growth case, in a child process whose old space is 64 MiB: a
 * flood of downloads that each enqueue a long-URL job keeps the heap and the
 * journal bounded (the child would die of heap exhaustion otherwise), and the
 * queue reopens. Once with one artifact downloaded thousands of times
 * (de-duplicated), once with thousands of distinct artifacts (the bound).
 * Every tenth download also tries a 200 KB job, which is refused as too large.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'
import type { EmbeddedQueueStats } from '../../engine/queue/embedded-queue.js'
import { EMBEDDED_QUEUE_BOUNDS } from '../../engine/queue/embedded-queue-bounds.js'
import { JOURNAL_FILE } from '../../engine/queue/queue-journal.js'
import { HEAP_MIB, runChild } from './run-bounded-child.js'


function statsOf(lines: string[]): EmbeddedQueueStats | undefined {
  const line = lines.find((l) => l.startsWith('stats '))
  return line === undefined ? undefined : JSON.parse(line.slice('stats '.length)) as EmbeddedQueueStats
}

async function folder(t: Test): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'queue-growth-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  return join(root, 'jobs')
}

t.test('one long-URL artifact downloaded 3,000 times: one pending job, a small journal', async (t) => {
  const dir = await folder(t)
  const run = await runChild(t, { QUEUE_CHILD_DIR: dir, QUEUE_CHILD_MODE: 'flood', QUEUE_CHILD_COUNT: '3000', QUEUE_CHILD_BODY_BYTES: '7000', QUEUE_CHILD_ARTIFACTS: '1' })
  t.equal(run.code, 0, `the child finished within a ${HEAP_MIB} MiB heap`)
  const stats = statsOf(run.lines)
  t.match(stats, { jobs: 1, sent: 1, deduplicated: 2999, refusedTooLarge: 300 })
  const journal = (await stat(join(dir, JOURNAL_FILE))).size
  t.ok(journal < 64 * 1024, `the journal holds one job (${journal} bytes)`)
  const queue = await EmbeddedQueue.open({ dir })
  t.teardown(() => queue.close())
  t.equal(queue.stats().jobs, 1, 'it reopens with the one job')
})

t.test('20,000 distinct long-URL artifacts: the bound holds, the oldest are kept, the queue reopens', async (t) => {
  const dir = await folder(t)
  const run = await runChild(t, { QUEUE_CHILD_DIR: dir, QUEUE_CHILD_MODE: 'flood', QUEUE_CHILD_COUNT: '20000', QUEUE_CHILD_BODY_BYTES: '6000', QUEUE_CHILD_ARTIFACTS: '20000' })
  t.equal(run.code, 0, `the child finished within a ${HEAP_MIB} MiB heap`)
  const stats = statsOf(run.lines)!
  const fit = Math.floor(EMBEDDED_QUEUE_BOUNDS.maxBytes / 6000)
  t.equal(stats.jobs, fit, `as many jobs as ${EMBEDDED_QUEUE_BOUNDS.maxBytes} bytes hold`)
  t.ok(stats.bytes <= EMBEDDED_QUEUE_BOUNDS.maxBytes)
  t.equal(stats.droppedFull, 20000 - fit, 'every other job was dropped and counted')
  t.equal(stats.refusedTooLarge, 2000)
  const full = run.lines.filter((l) => l.startsWith('log ') && l.includes('queue full'))
  t.equal(full.length, 1, 'the full queue was logged once')
  const journal = (await stat(join(dir, JOURNAL_FILE))).size
  t.ok(journal < 2 * EMBEDDED_QUEUE_BOUNDS.maxBytes, `the journal is bounded (${journal} bytes)`)

  const queue = await EmbeddedQueue.open({ dir })
  t.teardown(() => queue.close())
  t.equal(queue.stats().jobs, fit, 'it reopens with every kept job')
  t.equal(queue.stats().droppedAtReplay, 0)
  const [first] = await queue.receive({ max: 1, visibilitySeconds: 30 })
  t.match(first?.body, /\/00000000\//, 'the oldest job is first: nothing old was lost')
})
