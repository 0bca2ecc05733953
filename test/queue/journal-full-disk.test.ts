/**
 * A full disk under the embedded queue (ENOSPC on a real, tiny tmpfs): the
 * failed write is refused to its sender, counted and logged once; the queue
 * says it cannot take work (health, which /readyz reads); once space is back
 * it rewrites its live state and takes work again, and nothing a sender was
 * told is durable is lost. Mounting needs root: without it the test skips
 * and says why.
 */
import t from 'tap'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { mkdtemp, rm, writeFile, unlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'
import { JOURNAL_WRITABLE_AGAIN, JOURNAL_WRITE_FAILED } from '../../engine/queue/queue-journal.js'
import { isServiceError } from '../../engine/errors.js'

function tryMount(dir: string): string | undefined {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', dir], { stdio: 'pipe' })
    return undefined
  } catch (error) {
    return String((error as { stderr?: Buffer }).stderr ?? error).trim() || 'mount failed'
  }
}

/** Whether this process may mount a tmpfs (root, with the capability): the reason it may not, else undefined. */
function mountRefusal(): string | undefined {
  const probe = mkdtempSync(join(tmpdir(), 'queue-mount-probe-'))
  try {
    const refused = tryMount(probe)
    if (refused === undefined) execFileSync('umount', [probe])
    return refused
  } finally {
    rmSync(probe, { recursive: true, force: true })
  }
}

const refusal = mountRefusal()

t.test('ENOSPC: refused and said, then recovered once space is back, nothing durable lost', { skip: refusal === undefined ? false : `a tmpfs cannot be mounted here (${refusal}); this test needs root` }, async (t) => {
  const mountPoint = await mkdtemp(join(tmpdir(), 'queue-full-'))
  t.teardown(() => rm(mountPoint, { recursive: true, force: true }))
  const refused = tryMount(mountPoint)
  if (refused !== undefined) throw new Error(`mounting the test's tmpfs failed: ${refused}`)
  t.teardown(() => { execFileSync('umount', ['-l', mountPoint]) })
  const dir = join(mountPoint, 'queue')
  const logger = new RecordingLogger()
  const queue = await EmbeddedQueue.open({ dir, logger })
  // Leave about 16 KiB free: a few dozen 1 KiB jobs fit, then the disk is full.
  const filler = join(mountPoint, 'filler')
  await writeFile(filler, Buffer.alloc(200 * 1024))

  const durable: string[] = []
  let failure: unknown
  for (let i = 0; i < 400 && failure === undefined; i++) {
    const body = `job ${i} ${'x'.repeat(1000)}`
    try {
      await queue.send(body)
      durable.push(body)
    } catch (error) {
      failure = error
    }
  }
  t.ok(isServiceError(failure, 'QUEUE_FAILURE'), 'a send past the full disk is refused')
  t.ok(durable.length > 0, `${durable.length} sends were durable before the disk filled`)
  t.same(queue.health().writable, false, 'health says the queue cannot take work')
  t.equal(queue.health().reason, 'ENOSPC')
  t.equal(logger.find(JOURNAL_WRITE_FAILED).length, 1, 'logged once')
  t.equal(logger.find(JOURNAL_WRITE_FAILED)[0]?.level, 'error')
  await t.rejects(queue.send('while full'), 'still refused while the disk is full')
  t.equal(logger.find(JOURNAL_WRITE_FAILED).length, 1, 'not logged again for the same episode')

  await unlink(filler)
  await sleep(1100) // recovery is tried at most once a second
  await queue.send('after space came back')
  durable.push('after space came back')
  t.same(queue.health().writable, true, 'takes work again')
  t.equal(logger.find(JOURNAL_WRITABLE_AGAIN).length, 1)
  await queue.close()

  const reopened = await EmbeddedQueue.open({ dir })
  t.teardown(() => reopened.close())
  const bodies: string[] = []
  for (;;) {
    const batch = await reopened.receive({ max: 10, visibilitySeconds: 300 })
    if (batch.length === 0) break
    bodies.push(...batch.map((m) => m.body))
  }
  for (const body of durable) t.ok(bodies.includes(body), `durable: ${body.slice(0, 12)}`)
})
