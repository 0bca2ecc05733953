/**
 * One keep-alive artifact connection and its reusable read buffers. Apart
 * from the pool because this is the part that owns the socket's reads: node
 * fills buffers we hand it (`onread`), and which buffer is safe to hand out
 * next depends on which ones the relay still holds (artifact-connection-pool.ts
 * says why reads go into reused buffers at all). It knows the exchange only
 * as a ResponseReader (exchange-contract.ts).
 */
import type { Socket } from 'node:net'
import type { ExchangeConnection, ResponseReader } from './exchange-contract.js'

/** 256 KiB: nginx's relay buffer size (PEERS.md), and 4 loopback segments per read. */
export const READ_BUFFER_BYTES = 256 * 1024

/**
 * 512 KiB: the read buffer of a connection whose reads fill the 256 KiB one
 * (a fast upstream and a client that keeps up). Each read is a syscall, a
 * callback into JavaScript and a send to the client: 100 relays of 10 MiB
 * took about 4,400 reads, 4,500 sends and 1,100 epoll waits in 256 KiB
 * reads, and 2,100 to 2,250, 2,200 to 2,350 and 200 to 400 in 512 KiB ones
 * (issue 18, strace counts; 1 MiB read less again but stopped on the
 * client's backpressure far more often). How many connections may hold one
 * is bounded by a ReadBufferBudget, so memory stays one small buffer per
 * connection plus a fixed few.
 */
export const LARGE_READ_BUFFER_BYTES = 512 * 1024

/** The buffer a read lands in while the current one is still held: small, since it is rare. */
const SPARE_BUFFER_BYTES = 64 * 1024

/** A read the connection has not parsed yet: `buf[0, end)`. */
interface Backlog { readonly buf: Buffer, readonly end: number }

/** How many connections of a pool may read into a large buffer at once. */
export class ReadBufferBudget {
  #left: number

  constructor(buffers: number) {
    this.#left = buffers
  }

  /** True when a large buffer may be allocated; it is counted until `give`. */
  take(): boolean {
    if (this.#left <= 0) return false
    this.#left--
    return true
  }

  give(): void {
    this.#left++
  }
}

/** What a connection tells its pool (ArtifactConnections). */
export interface ArtifactConnectionOwner {
  /** Keeps a connection idle for reuse. */
  park(conn: ArtifactConnection, hintMs: number | undefined): void
  /** A connection closed: drop it from the books. */
  forget(conn: ArtifactConnection): void
}

/** node's `onread` option for net and tls connect. */
export interface OnRead { buffer: () => Buffer, callback: (n: number, b: Buffer) => boolean }

/**
 * One keep-alive connection with its reusable read buffers. node calls
 * `onread.buffer()` after each read for the buffer of the next one; a plain
 * socket reads nothing once the callback returned false, but a TLS socket
 * may still hand over records it already decrypted. So the next buffer is
 * never one still held: the main buffer when it is free, else a spare, else
 * (TLS only) a fresh one, queued in order behind the held read.
 */
export class ArtifactConnection implements ExchangeConnection {
  readonly key: string
  readonly socket: Socket
  readonly #pool: ArtifactConnectionOwner
  readonly #budget: ReadBufferBudget | undefined
  /** The main read buffer: READ_BUFFER_BYTES, or LARGE_READ_BUFFER_BYTES once reads filled it (budget allowing). */
  #buf: Buffer
  /** A read filled the main buffer: the next free moment, it may grow. */
  #full = false
  /** The main buffer is a large one, counted in the budget. */
  #large = false
  #spare: Buffer | undefined
  #exchange: ResponseReader | undefined
  /** Unparsed bytes of the current read: `#cur[#pos, #end)`. */
  #cur: Buffer
  #pos = 0
  #end = 0
  readonly #backlog: Backlog[] = []
  /** The last read callback returned false (or reads came in since): the current read is held. */
  #paused = false
  #dead = false
  /** The socket ended or closed while reads were still held: told once they are parsed. */
  #closing: { eof: boolean } | undefined
  #idleTimer: NodeJS.Timeout | undefined
  #error: Error | undefined
  reused = false

  constructor(pool: ArtifactConnectionOwner, key: string, open: (onread: OnRead) => Socket, budget?: ReadBufferBudget) {
    this.#pool = pool
    this.#budget = budget
    this.key = key
    this.#buf = Buffer.allocUnsafeSlow(READ_BUFFER_BYTES)
    this.#cur = this.#buf
    this.socket = open({ buffer: () => this.#nextBuffer(), callback: (n, b) => this.#onRead(n, b) })
    this.socket.setNoDelay(true)
    this.socket.on('error', (error) => { this.#error ??= error })
    this.socket.on('end', () => this.#onClose(true))
    this.socket.on('close', () => this.#onClose(false))
  }

  #held(buf: Buffer): boolean {
    return (this.#paused && this.#cur === buf) || this.#backlog.some((b) => b.buf === buf)
  }

  #nextBuffer(): Buffer {
    // The common case (the relay took the whole read): nothing held, no search.
    if (!this.#paused && this.#backlog.length === 0) return this.#mainBuffer()
    if (!this.#held(this.#buf)) return this.#mainBuffer()
    this.#spare ??= Buffer.allocUnsafeSlow(SPARE_BUFFER_BYTES)
    if (!this.#held(this.#spare)) return this.#spare
    return Buffer.allocUnsafe(SPARE_BUFFER_BYTES)
  }

  /** The main buffer, not held: grown first when the last read filled it and the budget has room. */
  #mainBuffer(): Buffer {
    if (this.#full) {
      this.#full = false
      if (!this.#large && this.#budget?.take() === true) {
        this.#large = true
        this.#buf = Buffer.allocUnsafeSlow(LARGE_READ_BUFFER_BYTES)
      }
    }
    return this.#buf
  }

  /** Gives a large buffer's place in the budget back (the connection is gone). */
  #returnBudget(): void {
    if (!this.#large) return
    this.#large = false
    this.#budget?.give()
  }

  #onRead(n: number, buf: Buffer): boolean {
    if (n === buf.byteLength && buf === this.#buf && !this.#large) this.#full = true
    const exchange = this.#exchange
    if (exchange === undefined) {
      // Bytes on an idle connection: nothing asked for them.
      this.destroy()
      return false
    }
    if (this.#paused) {
      this.#backlog.push({ buf, end: n })
      return false
    }
    this.#cur = buf
    this.#pos = 0
    this.#end = n
    const more = exchange.received(buf, 0, n)
    this.#paused = !more
    // At the head's end the body has no consumer yet, and gets one within a
    // tick. Stopping the handle now and starting it again then costs two
    // epoll_ctl calls per response (issue 18): keep reading. A read that
    // comes first waits in the backlog, and that one does stop the handle.
    return more || exchange.awaitingConsumer
  }

  #onClose(eof: boolean): void {
    const exchange = this.#exchange
    this.#dead = true
    this.#clearIdle()
    this.#returnBudget()
    this.#pool.forget(this)
    if (exchange !== undefined && this.#paused && !exchange.finished) {
      // Bytes already read come first: the close is told once they are parsed.
      this.#closing = { eof: eof || (this.#closing?.eof ?? false) }
      return
    }
    if (exchange !== undefined) exchange.closed(eof, this.#error)
    if (!this.socket.destroyed) this.socket.destroy()
  }

  get dead(): boolean { return this.#dead || this.socket.destroyed }

  /** Where parsing stopped in the current read. */
  consumed(pos: number): void {
    this.#pos = pos
  }

  /** Parses held reads in order; true once all are parsed (the socket may read again). */
  pump(exchange: ResponseReader): boolean {
    for (;;) {
      if (!exchange.pump(this.#cur, this.#pos, this.#end)) return false
      const next = this.#backlog.shift()
      if (next === undefined) break
      this.#cur = next.buf
      this.#pos = 0
      this.#end = next.end
    }
    this.#paused = false
    const closing = this.#closing
    if (closing !== undefined && this.#exchange === exchange) {
      this.#closing = undefined
      exchange.closed(closing.eof, this.#error)
      if (!this.socket.destroyed) this.socket.destroy()
      return false
    }
    return true
  }

  read(): void {
    this.#paused = false
    // A read callback that returned false stopped the handle; resume() starts it again.
    if (!this.#dead) this.socket.resume()
  }

  begin(exchange: ResponseReader, request: string): void {
    this.#clearIdle()
    this.#exchange = exchange
    this.#pos = 0
    this.#end = 0
    this.socket.write(request, 'latin1')
    this.read()
  }

  /** The exchange ended: keep the connection for the next one, or close it. */
  release(keepAlive: boolean, hintMs: number | undefined): void {
    this.#exchange = undefined
    if (!keepAlive || this.#dead) { this.destroy(); return }
    this.reused = true
    this.#pos = 0
    this.#end = 0
    this.read() // an idle connection reads, to notice the server closing it
    this.#pool.park(this, hintMs)
  }

  setIdle(ms: number, onExpire: () => void): void {
    this.#clearIdle()
    this.#idleTimer = setTimeout(onExpire, ms)
    this.#idleTimer.unref()
  }

  #clearIdle(): void {
    if (this.#idleTimer !== undefined) clearTimeout(this.#idleTimer)
    this.#idleTimer = undefined
  }

  destroy(): void {
    this.#dead = true
    this.#clearIdle()
    this.#returnBudget()
    this.#pool.forget(this)
    this.socket.destroy()
  }
}
