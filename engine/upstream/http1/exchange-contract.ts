/**
 * What one artifact connection and the exchange reading from it ask of each
 * other. In a file of its own so that neither side imports the other: the
 * connection (artifact-connection.ts) knows only `ResponseReader`, the
 * exchange (artifact-exchange.ts) only `ExchangeConnection`, and a test can
 * drive an exchange through a scripted connection.
 */

/** The exchange, as the connection sees it: where its reads go. */
export interface ResponseReader {
  /** The exchange ended (completed, failed or aborted): nothing more is parsed for it. */
  readonly finished: boolean
  /** A read arrived in `buf[pos, end)`; false stops the socket reading until the reader resumes it. */
  received(buf: Buffer, pos: number, end: number): boolean
  /**
   * The head is parsed and no consumer has asked for the body yet: the
   * reader holds its read, but one is about to attach (the caller resumes on
   * the next tick), so the socket need not stop reading for it.
   */
  readonly awaitingConsumer: boolean
  /** Parses a held read `buf[pos, end)` again; false while the consumer still holds the buffer. */
  pump(buf: Buffer, pos: number, end: number): boolean
  /** The socket ended (`eof`, a FIN) or closed; `error` is what it failed with, if anything. */
  closed(eof: boolean, error: Error | undefined): void
}

/** The connection, as the exchange sees it. */
export interface ExchangeConnection {
  /** True once the connection served an exchange before this one (keep-alive). */
  readonly reused: boolean
  /** Where parsing stopped in the current read. */
  consumed(pos: number): void
  /** Parses the held reads in order through `reader`; true once all are parsed (reading may resume). */
  pump(reader: ResponseReader): boolean
  /** Lets the socket read again. */
  read(): void
  /** The exchange ended at its exact end: keep the connection alive for the next one, or close it. */
  release(keepAlive: boolean, hintMs: number | undefined): void
  /** Closes the socket now. */
  destroy(): void
}
