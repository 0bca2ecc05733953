/**
 * One artifact exchange on a real ArtifactConnection whose socket is
 * scripted in memory: the test hands it reads (split where it likes, as
 * node's `onread` would deliver them) and an end, synchronously, so a fuzz
 * case costs microseconds and its outcome depends only on its seed. What
 * comes back is every settlement the caller saw, counted, so a test can
 * assert that each path out of the exchange settles it exactly once.
 */
import { EventEmitter } from 'node:events'
import type { Socket } from 'node:net'
import { ArtifactConnection, type ArtifactConnectionOwner, type OnRead } from '../../../engine/upstream/http1/artifact-connection.js'
import { ArtifactExchange, type ArtifactTimeouts } from '../../../engine/upstream/http1/artifact-exchange.js'
import type { ArtifactResponse } from '../../../engine/upstream/http1/artifact-response.js'
import type { ServiceError } from '../../../engine/errors.js'

/** Long enough never to fire during a synchronous run; they are unref'd and cleared when the exchange ends. */
const TIMEOUTS: ArtifactTimeouts = { connectMs: 60_000, headersMs: 60_000, bodyIdleMs: 60_000, pausedReadMs: 60_000 }

/** The parts of a net.Socket an ArtifactConnection uses. */
class FakeSocket extends EventEmitter {
  destroyed = false
  written = ''
  setNoDelay(): this { return this }
  write(text: string): boolean { this.written += text; return true }
  resume(): this { return this }
  destroy(): this { this.destroyed = true; return this }
}

class Owner implements ArtifactConnectionOwner {
  parked = 0
  forgotten = 0
  park(): void { this.parked++ }
  forget(): void { this.forgotten++ }
}

export interface ScriptedOutcome {
  /** 'reject': the head or the body failed; 'complete': the body (or a bodiless answer) ended at its framing's end. */
  readonly verdict: 'reject' | 'complete' | 'incomplete'
  readonly response: ArtifactResponse | undefined
  readonly error: Error | undefined
  readonly body: Buffer
  /** How often the head promise was settled (resolved or rejected). */
  readonly headSettles: number
  /** How often the body ended or failed (sink end + sink error). */
  readonly bodySettles: number
  /** The connection went back to the pool for reuse. */
  readonly parked: boolean
  readonly destroyed: boolean
}

export interface ScriptedExchange {
  /** Delivers `bytes` as reads cut at `cuts` (offsets into `bytes`, ascending). */
  feed(bytes: Buffer, cuts?: readonly number[]): void
  /** The peer ended the connection (a FIN), then it closed. */
  end(): void
  outcome(): ScriptedOutcome
}

/**
 * Starts one exchange for `method`. The body, when there is one, is read
 * through the relay's zero-copy sink; `holdEvery` makes the sink keep every
 * n-th view (backpressure), released after each read.
 */
export function scriptedExchange(method: 'GET' | 'HEAD' = 'GET', options: { holdEvery?: number } = {}): ScriptedExchange {
  const socket = new FakeSocket()
  const owner = new Owner()
  let onread: OnRead | undefined
  const conn = new ArtifactConnection(owner, 'http://scripted', (o) => { onread = o; return socket as unknown as Socket })
  let headSettles = 0
  let bodySettles = 0
  let response: ArtifactResponse | undefined
  let error: Error | undefined
  let ended = false
  let held = false
  let views = 0
  const parts: Buffer[] = []
  let attached = false
  const exchange = new ArtifactExchange(conn, method, 'scripted', TIMEOUTS, (result) => {
    // Only recorded here: the pool settles a promise, so a consumer never
    // attaches inside this call (it would re-enter the parse under way).
    headSettles++
    if (result instanceof Error) error ??= result
    else response = result
  })
  conn.begin(exchange, `${method} /a HTTP/1.1\r\n\r\n`)

  /** What the relay does once the head promise resolved: attach, then release each view it kept. */
  const consume = (): void => {
    const body = response?.body
    if (body === undefined || body === null) return
    if (!attached) {
      attached = true
      body.attach({
        data(chunk: Uint8Array): boolean {
          parts.push(Buffer.from(chunk))
          views++
          if (options.holdEvery !== undefined && views % options.holdEvery === 0) { held = true; return false }
          return true
        },
        end(): void { bodySettles++; ended = true },
        error(e: ServiceError): void { bodySettles++; error ??= e },
      })
    }
    while (held) {
      held = false
      body.proceed()
    }
  }

  return {
    feed(bytes, cuts = []) {
      const read = onread as OnRead
      let from = 0
      for (const to of [...cuts, bytes.byteLength]) {
        if (to <= from) continue
        // A read lands in whichever buffer the connection hands out next, as node's onread does.
        const buf = read.buffer()
        const n = bytes.copy(buf, 0, from, to)
        read.callback(n, buf)
        from = to
        consume()
      }
    },
    end() {
      socket.emit('end')
      socket.emit('close')
      consume()
    },
    outcome() {
      const verdict = error !== undefined ? 'reject'
        : response !== undefined && (response.body === null || ended) ? 'complete' : 'incomplete'
      return {
        verdict, response, error, body: Buffer.concat(parts), headSettles, bodySettles,
        parked: owner.parked > 0, destroyed: socket.destroyed,
      }
    },
  }
}
