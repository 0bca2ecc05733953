/**
 * `server.drainDelaySeconds`, the lame-duck period of the drain (issue 30
 * item 5): 5 s by default, inside `server.shutdownDrainTimeout`; a delay at
 * or past the bound is refused at config check (exit 2 at boot), with both
 * values named, wherever either comes from. 0 turns the period off, under
 * any bound.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { loadConfig, type LoadResult } from '../../engine/config/load.js'
import { CONFIG_REFUSAL } from '../../engine/errors.js'

const PUBLIC = 'https://public.example/'

async function load(t: Test, server: string | undefined, env: Record<string, string> = {}): Promise<LoadResult> {
  if (server === undefined) return loadConfig({ env, npmRegistry: () => PUBLIC })
  const dir = await mkdtemp(join(tmpdir(), 'drain-delay-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'config.yaml')
  await writeFile(file, `server: ${server}\n`)
  return loadConfig({ configPath: file, env, npmRegistry: () => PUBLIC })
}

function delayOf(result: LoadResult): number | string {
  return result.ok ? result.config.server.drainDelaySeconds : result.problems.map((p) => `${p.path}: ${p.message} (${p.source})`).join('; ')
}

t.test('the default is 5 s, inside the 30 s drain bound', async (t) => {
  const result = await load(t, undefined)
  t.equal(delayOf(result), 5)
  t.equal(result.ok && result.config.server.shutdownDrainTimeout, 30)
})

t.test('set by the document or the environment; fractions allowed; 0 turns it off under any bound', async (t) => {
  t.equal(delayOf(await load(t, '{ drainDelaySeconds: 10 }')), 10)
  t.equal(delayOf(await load(t, undefined, { SERVICE_SERVER__DRAIN_DELAY_SECONDS: '2.5' })), 2.5)
  t.equal(delayOf(await load(t, '{ drainDelaySeconds: 0, shutdownDrainTimeout: 0 }')), 0)
  t.equal(delayOf(await load(t, '{ shutdownDrainTimeout: 3 }', { SERVICE_SERVER__DRAIN_DELAY_SECONDS: '0' })), 0)
})

t.test('a delay at or past the drain bound is refused, both values named', async (t) => {
  const equal = await load(t, '{ drainDelaySeconds: 30 }')
  t.notOk(equal.ok)
  t.same(equal.ok ? [] : equal.problems.map((p) => [p.path, p.message]), [
    ['server.drainDelaySeconds', CONFIG_REFUSAL.drainDelayNotBelowDrainTimeout(30, 30)],
  ])
  t.match(delayOf(equal), /30 s is not below server\.shutdownDrainTimeout \(30 s\).*SERVICE_SERVER__DRAIN_DELAY_SECONDS/)

  const fromEnvironment = await load(t, '{ shutdownDrainTimeout: 10 }', { SERVICE_SERVER__DRAIN_DELAY_SECONDS: '12' })
  t.match(delayOf(fromEnvironment), /^server\.drainDelaySeconds: 12 s is not below server\.shutdownDrainTimeout \(10 s\).*\(environment SERVICE_SERVER__DRAIN_DELAY_SECONDS\)$/)

  // A bound lowered under the default delay is refused too: the delay would eat the whole drain.
  t.match(delayOf(await load(t, undefined, { SERVICE_SERVER__SHUTDOWN_DRAIN_TIMEOUT: '5' })), /5 s is not below server\.shutdownDrainTimeout \(5 s\)/)
  t.equal(delayOf(await load(t, undefined, { SERVICE_SERVER__SHUTDOWN_DRAIN_TIMEOUT: '6' })), 5, 'just above it is accepted')
})
