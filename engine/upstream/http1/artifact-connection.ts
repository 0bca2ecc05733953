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
 * client's backpressure far more often). A connection borrows one from the
 * process's LargeReadBuffers once a read filled the small buffer and the
 * relay took all of it, and gives it back when the exchange ends or the
 * relay has to keep a view (a slow client's reads fill the buffer too, but a
 * larger one would only be held longer); so memory stays one small buffer
 * per connection plus the memory plan's bounded number of large ones.
 */
export const LARGE_READ_BUFFER_BYTES = 512 * 1024

/** Large buffers lent at once when nobody says (the memory plan's figure without a memory limit): 32 MiB. */
export const DEFAULT_LARGE_READ_BUFFERS = 64

/** How long returned large buffers are kept once none is lent: long enough to span a bench's or a CI wave's pauses. */
export const LARGE_READ_BUFFERS_IDLE_MS = 30_000

/** The buffer a read lands in while the current one is still held: small, since it is rare. */
const SPARE_BUFFER_BYTES = 64 * 1024

/** A read the connection has not parsed yet: `buf[0, end)`. */
interface Backlog { readonly buf: Buffer, readonly end: number }

/**
 * The large read buffers of a process (the memory plan's
 * `artifactReadBuffers` bounds them), lent to a connection for part of one
 * exchange at a time. Lent, not given for a connection's life: kept that
 * long, 8 of them per upstream split its connections into two classes for
 * as long as they stayed alive (kept-alive ones included), and at 64
 * concurrent 10 MiB relays the 8 moved twice the bytes per read of the rest.
 * Returned buffers are kept for the next loans, so a steady load neither
 * maps and faults in a fresh 512 KiB per response nor leaves dropped ones
 * for the collector (RSS stays at the most ever lent at once); once none
 * has been lent for LARGE_READ_BUFFERS_IDLE_MS, the kept ones are let go,
 * so memory comes back after a burst.
 */
export class LargeReadBuffers {
  readonly #limit: number
  readonly #idleMs: number
  readonly #free: Buffer[] = []
  #lent = 0
  /** Loans made so far: the idle timer compares it to tell a quiet spell from a busy one. */
  #loans = 0
  #idleTimer: NodeJS.Timeout | undefined

  /** At most `limit` lent at once; kept ones let go after `idleMs` with none lent. */
  constructor(limit: number = DEFAULT_LARGE_READ_BUFFERS, idleMs: number = LARGE_READ_BUFFERS_IDLE_MS) {
    this.#limit = limit
    this.#idleMs = idleMs
  }

  /** A large buffer, or undefined when `limit` are out; counted until `giveBack` or `forfeit`. */
  lend(): Buffer | undefined {
    if (this.#lent >= this.#limit) return undefined
    this.#lent++
    this.#loans++
    return this.#free.pop() ?? Buffer.allocUnsafeSlow(LARGE_READ_BUFFER_BYTES)
  }

  /** A lent buffer nothing holds any more: kept for a later loan. */
  giveBack(buf: Buffer): void {
    this.#lent--
    this.#free.push(buf)
    if (this.#idleTimer === undefined) this.#armIdle(this.#loans)
  }

  /** A lent buffer that may still be held (its connection closed mid-read): its place comes back, the buffer does not. */
  forfeit(): void {
    this.#lent--
  }

  /** Lets every kept buffer go (the idle timer's work). */
  trim(): void {
    this.#free.length = 0
  }

  #armIdle(loans: number): void {
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = undefined
      if (this.#lent === 0 && this.#loans === loans) this.trim()
      else if (this.#free.length > 0) this.#armIdle(this.#loans)
    }, this.#idleMs)
    this.#idleTimer.unref()
  }

  /** Lent now (for tests and telemetry). */
  get lent(): number { return this.#lent }
  /** Kept for reuse now. */
  get kept(): number { return this.#free.length }

  /** The figures telemetry reads (`service.artifact.read_buffers.*`). */
  snapshot(): { lent: number, kept: number, limit: number } {
    return { lent: this.#lent, kept: this.#free.length, limit: this.#limit }
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
 * Feeds `onread.callback` from 'data' events, for a socket that cannot take
 * `onread`: node's tls.connect ignores it when it is given an existing
 * socket (a CONNECT tunnel, forward-proxy.ts), and a plain tunnel was read
 * as a stream for the proxy's answer. Each read then arrives in a buffer
 * node allocated (the cost the `onread` path avoids; the connection never
 * lends such a connection a large buffer, since no read lands in its small
 * one). Backpressure is kept: a callback that returns false pauses the
 * socket, so node stops reading at the stream's high-water mark and TCP
 * holds the sender; `read()`'s resume() starts it again.
 */
export function readByEvents(socket: Socket, onread: OnRead): Socket {
  socket.on('data', (chunk: Buffer) => {
    if (!onread.callback(chunk.byteLength, chunk)) socket.pause()
  })
  return socket
}

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
  readonly #large: LargeReadBuffers | undefined
  /** The connection's own read buffer, READ_BUFFER_BYTES. */
  readonly #small: Buffer
  /** The main read buffer: the small one, or a large one lent for this exchange. */
  #buf: Buffer
  /** A read filled the small buffer and the relay took it all: the next free moment, a large one may be lent. */
  #full = false
  /** `#buf` is lent by `#large`. */
  #lent = false
  /** The exchange ended while the socket's next read still targets the lent buffer: given back at the next read. */
  #giveBackPending = false
  /** The buffer node reads into next: the last one `#nextBuffer` returned. */
  #target: Buffer
  /** Inside the read callback: node asks for the next read's buffer once it returns. */
  #inRead = false
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

  constructor(pool: ArtifactConnectionOwner, key: string, open: (onread: OnRead) => Socket, large?: LargeReadBuffers) {
    this.#pool = pool
    this.#large = large
    this.key = key
    this.#small = Buffer.allocUnsafeSlow(READ_BUFFER_BYTES)
    this.#buf = this.#small
    this.#target = this.#small
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
    // A read into the lent buffer that a new exchange holds keeps it lent, to that exchange.
    if (this.#giveBackPending && !this.#held(this.#buf)) this.#returnLoan()
    const next = this.#chooseBuffer()
    this.#target = next
    return next
  }

  #chooseBuffer(): Buffer {
    // The common case (the relay took the whole read): nothing held, no search.
    if (!this.#paused && this.#backlog.length === 0) return this.#mainBuffer()
    if (!this.#held(this.#buf)) return this.#mainBuffer()
    this.#spare ??= Buffer.allocUnsafeSlow(SPARE_BUFFER_BYTES)
    if (!this.#held(this.#spare)) return this.#spare
    return Buffer.allocUnsafe(SPARE_BUFFER_BYTES)
  }

  /** The main buffer, not held: a large one first when the last read filled the small one and one is free. */
  #mainBuffer(): Buffer {
    if (this.#full) {
      this.#full = false
      const large = this.#large?.lend()
      if (large !== undefined) {
        this.#lent = true
        this.#buf = large
      }
    }
    return this.#buf
  }

  /**
   * The loan ends: the exchange ended, or the relay had to keep a view and
   * every held read is parsed since. Nothing left in the lent buffer is
   * read again (release drops the rest of the current read, and a finished
   * exchange parses no held read). Only the socket's next read matters:
   * inside the read callback node asks for the next buffer once it returns;
   * otherwise a next read that targets the lent buffer waits for that read
   * (another connection could read into it too).
   */
  #endLoan(): void {
    this.#full = false
    if (!this.#lent) return
    if (this.#inRead || this.#target !== this.#buf) this.#returnLoan()
    else this.#giveBackPending = true
  }

  #returnLoan(): void {
    this.#giveBackPending = false
    this.#lent = false
    this.#large?.giveBack(this.#buf)
    this.#buf = this.#small
  }

  /** The connection is gone, maybe with reads still held: the lent buffer's place comes back, not the buffer. */
  #forfeitLarge(): void {
    this.#full = false
    if (!this.#lent) return
    this.#lent = false
    this.#giveBackPending = false
    this.#large?.forfeit()
  }

  #onRead(n: number, buf: Buffer): boolean {
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
    this.#inRead = true
    const more = exchange.received(buf, 0, n)
    this.#inRead = false
    this.#paused = !more
    if (more && n === buf.byteLength && buf === this.#small && !this.#lent && this.#exchange === exchange) this.#full = true
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
    this.#forfeitLarge()
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
    // The relay had to keep a view: its client does not keep up, and a large buffer would only be held longer.
    this.#endLoan()
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
    this.#endLoan()
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
    this.#forfeitLarge()
    this.#pool.forget(this)
    this.socket.destroy()
  }
}
