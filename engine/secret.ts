import { inspect } from 'node:util'

export const REDACTED = '[REDACTED]'

/**
 * A bearer token (SPEC.md 2.10, 5.6). It renders as a redacted placeholder
 * wherever it appears, in JSON, in string conversion and in util.inspect, so
 * a log line or a configuration echo can never carry it by accident. Only
 * `reveal()` yields the value, at the one place that sends it.
 */
export class BearerToken {
  readonly #value: string

  constructor(value: string) {
    if (value.length === 0) throw new TypeError('a bearer token must not be empty')
    this.#value = value
  }

  reveal(): string { return this.#value }
  toJSON(): string { return REDACTED }
  toString(): string { return REDACTED }
  [inspect.custom](): string { return REDACTED }
}
