/**
 * Runs the built `service` binary (dist/, made by `npm test`'s build step)
 * as a child process, and kills it at teardown by the pid it started. The
 * launcher runs the role in a second process; both are in a process group
 * of their own, whose id is the launcher's pid, and teardown kills the
 * group: a launcher killed while its role still boots (a test that timed
 * out waiting for it) would otherwise leave the role running, since the
 * role stops on the launcher's disconnect only once it has booted.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readBuildInfo } from '../../engine/build-info.js'

export const SERVICE_BIN = join(readBuildInfo().root, 'dist/server/cli/service.js')

export interface ServiceRun {
  readonly child: ChildProcess
  stdout(): string
  stderr(): string
  /** Resolves with the exit code (or the signal name) once the process ends. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** Resolves when stdout has a line containing `text`. */
  waitForOutput(text: string, timeoutMs?: number): Promise<void>
}

/** The environment of a service process that serves its metrics to Prometheus on 127.0.0.1:`metricsPort` (nothing else exported). */
export function prometheusEnv(metricsPort: number): Record<string, string> {
  return {
    SERVICE_OBSERVABILITY__TELEMETRY: 'on',
    OTEL_METRICS_EXPORTER: 'prometheus',
    OTEL_TRACES_EXPORTER: 'none',
    OTEL_LOGS_EXPORTER: 'none',
    OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1',
    OTEL_EXPORTER_PROMETHEUS_PORT: String(metricsPort),
  }
}

interface Teardown { teardown(fn: () => unknown): void }

/** `node`: another Node binary to run the service on (the runtime tests); default this one. */
export function runService(t: Teardown, args: readonly string[], env: Record<string, string> = {}, node: string = process.execPath): ServiceRun {
  if (!existsSync(SERVICE_BIN)) throw new Error(`${SERVICE_BIN} is missing: run \`npm run build\` (npm test does it first)`)
  // A folder of its own for the kept documents unless the test names one (a restart test does): not ./var/warm of the checkout.
  const warm = env['SERVICE_CACHE__WARM_PATH'] === undefined ? mkdtempSync(join(tmpdir(), 'service-warm-')) : undefined
  const child = spawn(node, [SERVICE_BIN, ...args], {
    // No lame-duck period unless a test asks for one: the tests that stop a proxy with SIGTERM would each wait it out.
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', SERVICE_SERVER__DRAIN_DELAY_SECONDS: '0', ...(warm === undefined ? {} : { SERVICE_CACHE__WARM_PATH: warm }), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  let out = ''
  let err = ''
  const waiters: { text: string; resolve: () => void }[] = []
  child.stdout?.on('data', (c: Buffer) => {
    out += c.toString('utf8')
    for (const w of waiters.splice(0)) {
      if (out.includes(w.text)) w.resolve()
      else waiters.push(w)
    }
  })
  child.stderr?.on('data', (c: Buffer) => { err += c.toString('utf8') })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }))
  })
  t.teardown(async () => {
    const running = child.exitCode === null && child.signalCode === null
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL')
    } catch {
      // ESRCH: the group is gone, every process in it has exited.
    }
    if (running) await exited
    if (warm !== undefined) rmSync(warm, { recursive: true, force: true })
  })
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    // 60 s: a boot on a loaded 2-core CI machine (several service processes and peers at once) has taken more than 20 s.
    waitForOutput: (text, timeoutMs = 60_000) => new Promise<void>((resolve, reject) => {
      if (out.includes(text)) return resolve()
      const timer = setTimeout(() => reject(new Error(`timed out waiting for "${text}"; stdout: ${out}; stderr: ${err}`)), timeoutMs)
      waiters.push({ text, resolve: () => { clearTimeout(timer); resolve() } })
      void exited.then(() => { clearTimeout(timer); if (!out.includes(text)) reject(new Error(`exited before "${text}"; stdout: ${out}; stderr: ${err}`)) })
    }),
  }
}
