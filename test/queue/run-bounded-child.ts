/**
 * Runs queue-bounded.child.ts to its end under a small old space, with the
 * TypeScript loader tap gave this process and no coverage hooks.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'

const CHILD = fileURLToPath(new URL('./queue-bounded.child.ts', import.meta.url))
export const HEAP_MIB = 64

/** Runs the child to its end; resolves with its stdout lines and exit code. */
export async function runChild(t: Test, env: Record<string, string>, heapMiB = HEAP_MIB): Promise<{ lines: string[], code: number | null, signal: string | null }> {
  const loader = process.execArgv.filter((a) => a.includes('@tapjs/typescript'))
  const { NODE_OPTIONS: _coverage, ...inherited } = process.env
  const child = spawn(process.execPath, [`--max-old-space-size=${heapMiB}`, ...loader, CHILD], { env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  let out = ''
  let err = ''
  child.stdout.on('data', (c: Buffer) => { out += c.toString('utf8') })
  child.stderr.on('data', (c: Buffer) => { err += c.toString('utf8') })
  const [code, signal] = await new Promise<[number | null, string | null]>((resolve) => child.once('close', (c, s) => resolve([c, s])))
  if (code !== 0) t.comment(`child stderr: ${err.slice(-2000)}`)
  return { lines: out.split('\n').filter(Boolean), code, signal }
}

