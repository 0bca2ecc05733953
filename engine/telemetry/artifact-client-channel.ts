/**
 * The telemetry hook of the artifact connections (engine/upstream/http1/),
 * which are not undici and so publish nothing on undici's diagnostics
 * channels. They publish on channels of their own, with undici's message
 * shapes (`{ request }`, `{ request, response: { statusCode } }`,
 * `{ request, error }`), so client-durations.ts measures both clients with
 * the same handlers: `http.client.request.duration`, the client span, and
 * the W3C `traceparent` on the private leg only.
 *
 * MUST cost nothing with telemetry off (the relay is the hottest path):
 * `artifactRequest` reads `hasSubscribers` and answers undefined, so a
 * request with nobody listening allocates nothing and the connection code
 * tests one optional field.
 */
import diagnostics from 'node:diagnostics_channel'

export const ARTIFACT_REQUEST_CREATE = 'registry-proxy:artifact:request:create'
export const ARTIFACT_REQUEST_HEADERS = 'registry-proxy:artifact:request:headers'
export const ARTIFACT_REQUEST_END = 'registry-proxy:artifact:request:end'
export const ARTIFACT_REQUEST_ERROR = 'registry-proxy:artifact:request:error'

// Held here so the channel objects (and their subscribers) live as long as the module.
const create = diagnostics.channel(ARTIFACT_REQUEST_CREATE)
const headers = diagnostics.channel(ARTIFACT_REQUEST_HEADERS)
const end = diagnostics.channel(ARTIFACT_REQUEST_END)
const error = diagnostics.channel(ARTIFACT_REQUEST_ERROR)

/** What a request abandoned by its consumer failed with (`error.type` `aborted`, as the server spans say). */
const ABORTED = Object.freeze({ code: 'aborted' })

/**
 * One artifact request, as a subscriber sees it. Ends once: the first of
 * `end` and `fail` is published, later calls are ignored (a body destroyed
 * after its error, a retry's rejection after the exchange's own failure).
 */
export class ArtifactClientRequest {
  readonly origin: string
  readonly method: string
  /** Header lines a subscriber added at creation (`name: value`), sent with the request. */
  added: string[] | undefined
  #ended = false

  constructor(origin: string, method: string) {
    this.origin = origin
    this.method = method
  }

  /** Called by a subscriber of the create channel only (the W3C `traceparent` of the private leg). */
  addHeader(name: string, value: string): void {
    (this.added ??= []).push(`${name}: ${value}`)
  }

  /** The final response head arrived. */
  response(statusCode: number): void {
    if (!this.#ended) headers.publish({ request: this, response: { statusCode } })
  }

  /** The exchange ended at its exact end (a bodiless answer at its head). */
  end(): void {
    if (this.#ended) return
    this.#ended = true
    end.publish({ request: this })
  }

  /** The exchange failed, or (no reason) was abandoned by its consumer. */
  fail(reason?: unknown): void {
    if (this.#ended) return
    this.#ended = true
    error.publish({ request: this, error: reason ?? ABORTED })
  }
}

/** A request to trace, or undefined (nothing allocated) when nobody listens. */
export function artifactRequest(origin: string, method: string): ArtifactClientRequest | undefined {
  if (!create.hasSubscribers) return undefined
  const request = new ArtifactClientRequest(origin, method)
  create.publish({ request })
  return request
}
