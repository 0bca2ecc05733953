/**
 * The body of one artifact response, and the sink the relay reads it with.
 * Apart from the exchange because it is what callers hold: a Readable for
 * any consumer, or zero-copy views for the relay (artifact-connection-pool.ts
 * says why that matters).
 */
import { Readable } from 'node:stream'
import { ServiceError } from '../../errors.js'

/**
 * A consumer that takes body bytes synchronously (the relay). `data` gets a
 * view of the connection's read buffer: return true when done with it, false
 * to keep it (backpressure) and call `ArtifactBody.proceed()` once done.
 */
export interface ArtifactSink {
  data(chunk: Uint8Array): boolean
  /** The body ended at its exact length. */
  end(): void
  /** The body failed; the connection is already closed. */
  error(error: ServiceError): void
}

/** What feeds a body: the exchange on its connection (artifact-exchange.ts). */
export interface ArtifactBodySource {
  attach(sink: ArtifactSink): void
  proceed(): void
  want(): void
  abort(): void
}

/**
 * The body of one artifact response. A Readable for any consumer (bytes are
 * copied out of the connection's buffer); the relay uses `attach` instead,
 * which hands it views of the buffer and allocates nothing.
 */
export class ArtifactBody extends Readable {
  readonly #exchange: ArtifactBodySource
  #attached = false

  constructor(exchange: ArtifactBodySource) {
    super({ highWaterMark: 64 * 1024 })
    this.#exchange = exchange
    // A failure nobody observes (a destroy after the consumer detached) must not end the process.
    this.on('error', () => {})
  }

  /** Starts the zero-copy flow into `sink`. The Readable side then stays unused. */
  attach(sink: ArtifactSink): void {
    if (this.#attached || this.readableFlowing !== null) throw new ServiceError('INTERNAL', { message: 'an artifact body has one consumer' })
    this.#attached = true
    if (this.destroyed) {
      // It failed (or was destroyed) before anyone read it: the sink still hears of it.
      const reason = this.errored
      sink.error(reason instanceof ServiceError ? reason : new ServiceError('UPSTREAM_UNAVAILABLE', { cause: reason ?? undefined, data: { reason: 'body closed before it was read' } }))
      return
    }
    this.#exchange.attach(sink)
  }

  /** The sink is done with the view it kept: parsing and reading continue. */
  proceed(): void {
    this.#exchange.proceed()
  }

  override _read(): void {
    if (!this.#attached) this.#exchange.want()
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#exchange.abort()
    callback(error)
  }
}
