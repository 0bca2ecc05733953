/**
 * Steady load for rolling-restart tests: undici clients that follow
 * `Connection: close` and never retry, requesting `paths` in turn through
 * one origin (a balancer) until `stop`, which resolves with what they saw.
 * A kept-alive client reconnects after an answer with `Connection: close`;
 * a fresh-connection client (undici's `pipelining: 0`) opens a new
 * connection for every request.
 */
import { Client } from 'undici'

export interface LoadFigures {
  sent: number
  ok: number
  failed: number
  /** Answers that carried `Connection: close` (each one a reconnect). */
  closing: number
  readonly failures: string[]
}

export interface LoadOptions {
  readonly keptAliveClients: number
  readonly freshConnectionClients: number
  /** Each client's pause between two requests. */
  readonly pauseMs: number
}

export function startLoad(origin: string, paths: readonly string[], options: LoadOptions): { stop: () => Promise<LoadFigures> } {
  const figures: LoadFigures = { sent: 0, ok: 0, failed: 0, closing: 0, failures: [] }
  let stopping = false
  const one = async (offset: number, keepAlive: boolean): Promise<void> => {
    const client = new Client(origin, { keepAliveTimeout: 30_000, pipelining: keepAlive ? 1 : 0, headersTimeout: 30_000, bodyTimeout: 30_000 })
    try {
      for (let i = offset; !stopping; i++) {
        const path = paths[i % paths.length] as string
        figures.sent++
        try {
          const res = await client.request({ path, method: 'GET' })
          const body = await res.body.arrayBuffer()
          if (res.headers['connection'] === 'close') figures.closing++
          if (res.statusCode === 200 && body.byteLength > 0) figures.ok++
          else { figures.failed++; figures.failures.push(`${path}: status ${res.statusCode} ${Buffer.from(body).toString('utf8').slice(0, 120)}`) }
        } catch (error) {
          figures.failed++
          figures.failures.push(`${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`)
        }
        await new Promise((resolve) => setTimeout(resolve, options.pauseMs))
      }
    } finally {
      await client.destroy()
    }
  }
  const clients = [
    ...Array.from({ length: options.keptAliveClients }, (_, i) => one(i, true)),
    ...Array.from({ length: options.freshConnectionClients }, (_, i) => one(i, false)),
  ]
  return {
    stop: async () => {
      stopping = true
      await Promise.all(clients)
      return figures
    },
  }
}
