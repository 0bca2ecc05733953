/**
 * `GET /py/simple/{project}/` as a use case (issue 16), the `py` twin of
 * PackumentService: fetch the private and public project pages concurrently
 * (JSON preferred, HTML accepted), charging every decompressed chunk at `py`'s
 * rate per source byte (SPEC.md 8.1); hand them to the renderer (a pool task);
 * decide the status with the same most-recoverable rule as `/js`; retain
 * the assembled page per format and every file the page named, for the file
 * route.
 */
import { answerState } from '../cache/answer-state.js'
import type { AssembledResponse, MetadataCache, Work } from '../cache/metadata-cache.js'
import { assembledKey, DEFAULT_ASSEMBLED_TTL_MS, selectedVersionKey } from '../cache/metadata-cache.js'
import type { Clock } from '../clock.js'
import { isServiceError, ServiceError } from '../errors.js'
import { fetchCharged, type ChargedFetch } from '../listing/charged-fetch.js'
import { mostRecoverable } from '../listing/most-recoverable.js'
import { responseChargeBytes } from '../listing/output-basis.js'
import { chunkBytes, withPrepaidResponse } from '../listing/prepaid-charge.js'
import { withholdingError } from '../listing/withholding.js'
import type { Admission } from '../memory/gate.js'
import { REQUEST_TIMEOUT_MS } from '../memory/gate.js'
import { chargedRead } from '../packument/packument-service.js'
import { inChildSpan } from '../telemetry/work-span.js'
import type { UpstreamClient } from '../upstream/upstream-client.js'
import type { PageFormat } from './content-negotiation.js'
import type { PageFile } from './project-page.js'
import { SIMPLE_HTML_V1, SIMPLE_JSON_V1, TEXT_HTML } from './simple-model.js'

/** What the service asks upstreams for: PEP 691 JSON first, the HTML forms after (pypiserver speaks only `text/html`). */
export const UPSTREAM_PAGE_ACCEPT = `${SIMPLE_JSON_V1}, ${SIMPLE_HTML_V1};q=0.2, ${TEXT_HTML};q=0.1`

export interface UpstreamPageResult {
  readonly chunks: Uint8Array[]
  readonly contentType: string | undefined
  readonly url: string
}

export interface PageRenderJob {
  readonly project: string
  readonly format: PageFormat
  /** The base URL of the page's file URLs; undefined: the mount's configured one. */
  readonly baseUrl: string | undefined
  readonly now: number
  readonly privatePage: UpstreamPageResult | undefined
  readonly publicPage: UpstreamPageResult | undefined
  /** Charges the response's share before rendering; rejects when refused. */
  readonly charge: (bytes: number) => Promise<void>
  readonly signal: AbortSignal
}

/** What a render returns (workers/py-page-task.ts PyPageOutcome). */
export interface PageOutcome {
  readonly body: Uint8Array | undefined
  readonly etag: string | undefined
  readonly files: readonly PageFile[]
  readonly withholding: Parameters<typeof withholdingError>[0]
  /** When a retained copy must be gated again (engine/listing/regate-at.ts); undefined: its time to live decides. */
  readonly regateAt?: number | undefined
}

export interface ProjectServiceOptions<O extends PageOutcome> {
  readonly privateClient: UpstreamClient | undefined
  readonly publicClient: UpstreamClient | undefined
  readonly render: (job: PageRenderJob) => Promise<O>
  readonly cache: MetadataCache<PageFile>
  readonly clock: Clock
  /** The rules-and-database generation retained answers are keyed by (mount-wiring.ts `answerGeneration`): a new one never serves an old decision. */
  readonly generation: () => number | string
  /** Outage tracking, counters and the once-per-project logs of one render. */
  readonly observe: (outcome: O, project: string) => void
}

export interface PageRequest {
  /** The PEP 503 normal name. */
  readonly project: string
  readonly format: PageFormat
  /** The base URL of the page's file URLs when they follow the request's origin; undefined: the configured one. */
  readonly baseUrl?: string | undefined
  readonly admission: Admission
  readonly signal: AbortSignal
}

export class ProjectService<O extends PageOutcome> {
  readonly #o: ProjectServiceOptions<O>

  constructor(options: ProjectServiceOptions<O>) {
    this.#o = options
  }

  /**
   * The assembled page (from the store, or led or joined). A retained page
   * past its re-gate instant (a waiver naming the project expired, a file's
   * quarantine ended) is rendered again, as a js answer is
   * (engine/cache/answer-state.ts); py pages are never revalidated.
   */
  async assemble(request: PageRequest): Promise<AssembledResponse> {
    const { cache, clock } = this.#o
    const key = assembledKey('py', request.project, request.format, this.#o.generation(), request.baseUrl ?? '')
    const servable = (held: AssembledResponse): boolean => answerState(held, clock.now(), undefined) === 'fresh'
    const held = await cache.assembled.retained(key, chargedRead(request.admission, request.signal))
    if (held !== undefined && servable(held)) {
      cache.assembled.countHit()
      return held
    }
    // Another replica's page serves only when it is not itself due (docs/cache.md "Collapsing across replicas").
    return cache.assembled.lead(key, (signal, work) => this.#load(request, signal, work), request.signal, servable)
  }

  /**
   * A file the project page names (offered or withheld), reading the page
   * when the store lacks it: a client with a lockfile (`pip install -r` with
   * hashes) may ask for a file it never read the page for.
   */
  async selectFile(project: string, filename: string, admission: Admission, signal: AbortSignal): Promise<PageFile | undefined> {
    const key = selectedVersionKey('py', project, filename)
    const read = chargedRead(admission, signal)
    const hit = await this.#o.cache.version.peek(key, read)
    if (hit !== undefined) return hit
    await this.assemble({ project, format: 'json', admission, signal }).catch((error: unknown) => {
      if (!isServiceError(error) || error.code !== 'POLICY_WITHHELD') throw error
    })
    return this.#o.cache.version.peek(key, read)
  }

  async #load(request: PageRequest, signal: AbortSignal, work: Work): Promise<AssembledResponse> {
    const { privateClient, publicClient } = this.#o
    const fetchFrom = async (client: UpstreamClient | undefined): Promise<[ChargedFetch, string]> => {
      if (client !== undefined) this.#o.cache.full.read()
      const url = client === undefined ? '' : `${client.baseUrl.href}${request.project}/`
      const fetched = await fetchCharged(client, (c, options) => c.fetchProjectPage(request.project, { ...options, accept: UPSTREAM_PAGE_ACCEPT }), request.admission, 'py', signal)
      return [fetched, url]
    }
    const [[priv, privUrl], [pub, pubUrl]] = await Promise.all([fetchFrom(privateClient), fetchFrom(publicClient)])
    const failures = [priv, pub].flatMap((f) => (f.kind === 'failed' ? [f.error] : []))
    const page = (f: ChargedFetch, url: string): UpstreamPageResult | undefined =>
      f.kind === 'document' ? { chunks: f.chunks, contentType: f.contentType, url } : undefined
    const privatePage = page(priv, privUrl)
    const publicPage = page(pub, pubUrl)
    if (privatePage === undefined && publicPage === undefined) {
      throw mostRecoverable(failures) ?? new ServiceError('UPSTREAM_MISS')
    }

    const readAt = this.#o.clock.now()
    let outcome: O
    try {
      // Prepaid at its bound, the two pages together (engine/listing/prepaid-charge.ts), before the pool takes the render.
      const bound = responseChargeBytes(chunkBytes(privatePage?.chunks, publicPage?.chunks), 'py')
      outcome = await withPrepaidResponse(request.admission, bound, { timeoutMs: REQUEST_TIMEOUT_MS, signal }, (charge) =>
        inChildSpan('project page render', { 'package.name': request.project, 'pypi.page.format': request.format }, () => this.#o.render({
          project: request.project,
          format: request.format,
          baseUrl: request.baseUrl,
          now: readAt,
          privatePage,
          publicPage,
          charge,
          signal,
        })))
    } catch (error) {
      throw mostRecoverable([...failures, isServiceError(error) ? error : new ServiceError('INTERNAL', { cause: error })])
    }
    this.#o.observe(outcome, request.project)
    await this.#o.cache.version.retainMany(outcome.files.map((file) => [selectedVersionKey('py', request.project, file.filename), file] as const), work)
    if (outcome.body === undefined || outcome.etag === undefined) {
      throw mostRecoverable([...failures, withholdingError(outcome.withholding) ?? new ServiceError('POLICY_WITHHELD')])
    }
    if (outcome.regateAt === undefined) return { body: outcome.body, etag: outcome.etag }
    // No validators are kept (sources undefined): past its time to live or its re-gate instant it is rendered again.
    const freshness = { renderedAt: readAt, freshUntil: readAt + DEFAULT_ASSEMBLED_TTL_MS, regateAt: outcome.regateAt, sources: undefined }
    return { body: outcome.body, etag: outcome.etag, freshness }
  }
}
