/**
 * Compaction is crash-safe: a child that compacts over and over (sends,
 * receives and deletes 8 KB jobs) is killed with SIGKILL the moment its
 * compaction temp file appears, several times over. Each reopen finds every
 * job whose send resolved and whose delete was not yet started, and none
 * whose delete resolved.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, watch } from 'node:fs'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import type { Test } from 'tap'
import { ManualClock } from '../doubles/manual-clock.js'
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'
import { COMPACT_FILE } from '../../engine/queue/queue-journal.js'

const CHILD = fileURLToPath(new URL('./queue-bounded.child.ts', import.meta.url))
const ROUNDS = 3

/** Starts the churning child and kills it with SIGKILL when its compaction temp file appears. */
async function killMidCompaction(t: Test, dir: string): Promise<{ lines: string[], tempLeft: boolean }> {
  const loader = process.execArgv.filter((a) => a.includes('@tapjs/typescript'))
  const { NODE_OPTIONS: _coverage, ...inherited } = process.env
  const child = spawn(process.execPath, [...loader, CHILD], {
    env: { ...inherited, QUEUE_CHILD_DIR: dir, QUEUE_CHILD_MODE: 'churn', QUEUE_CHILD_COUNT: '300', QUEUE_CHILD_COMPACTION_FLOOR: '64' },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  let out = ''
  child.stdout.on('data', (c: Buffer) => { out += c.toString('utf8') })
  const ended = once(child.stdout, 'end')
  const exited = once(child, 'exit')
  await new Promise<void>((resolve, reject) => {
    const watcher = watch(dir, (_event, name) => {
      if (name !== COMPACT_FILE || !out.includes('ready\n') || !existsSync(join(dir, COMPACT_FILE))) return
      child.kill('SIGKILL')
      watcher.close()
      resolve()
    })
    child.once('exit', () => { watcher.close(); reject(new Error(`the child ended on its own: ${out.slice(-300)}`)) })
  })
  await exited
  // Still there after the death: the kill landed before the rename.
  const tempLeft = existsSync(join(dir, COMPACT_FILE))
  await ended
  return { lines: out.split('\n').filter(Boolean), tempLeft }
}

t.test('kill -9 mid-compaction, reopen: nothing lost, nothing deleted comes back', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'queue-compaction-crash-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  let caughtMid = 0
  for (let round = 0; round < ROUNDS; round++) {
    const dir = join(root, `jobs-${round}`)
    await mkdir(dir)
    const { lines, tempLeft } = await killMidCompaction(t, dir)
    if (tempLeft) caughtMid++
    const sent = new Set<string>()
    const deleting = new Set<string>()
    const deleted = new Set<string>()
    for (const line of lines) {
      const [what, ...rest] = line.split(' ')
      const name = rest.join(' ')
      if (what === 'sent') sent.add(name)
      else if (what === 'deleting') deleting.add(name)
      else if (what === 'deleted') deleted.add(name)
    }
    t.ok(deleted.size > 0, `round ${round}: the child had deleted ${deleted.size} jobs and sent ${sent.size}`)
    // Its receives hid jobs for 300 s of real time: look from an hour later.
    const queue = await EmbeddedQueue.open({ dir, clock: new ManualClock(Date.now() + 3_600_000) })
    const present = new Set<string>()
    for (;;) {
      const batch = await queue.receive({ max: 10, visibilitySeconds: 300 })
      if (batch.length === 0) break
      for (const m of batch) present.add(m.body.slice(0, m.body.indexOf(' ', 4)))
    }
    await queue.close()
    const lost = [...sent].filter((name) => !deleting.has(name) && !present.has(name))
    const back = [...deleted].filter((name) => present.has(name))
    t.same(lost, [], `round ${round}: every pending job is there (${present.size})`)
    t.same(back, [], `round ${round}: no deleted job came back`)
  }
  t.ok(caughtMid > 0, `at least one kill landed while the compaction temp file was being written (${caughtMid} of ${ROUNDS})`)
})
