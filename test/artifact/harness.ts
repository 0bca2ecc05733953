/**
 * The artifact handler mounted on a real FrontDoor (server/routes/js-mount.ts)
 * on 127.0.0.1 port 0, with recording defaults for every dependency, and an
 * undici client that talks to it over real HTTP. Everything closes at
 * teardown, even when the test fails.
 */
import { Agent, request, type Dispatcher } from 'undici'
import { RecordingLogger } from '../doubles/recording-logger.js'
import type { MirrorJob } from '../../engine/mirror/mirror-job.js'
import type { Decision, VersionFacts } from '../../engine/policy/decision.js'
import { decision } from '../helpers/decisions.js'

export { decision }
import { FrontDoor } from '../../server/http/front-door.js'
import { ArtifactCounters } from '../../server/routes/artifact-counters.js'
import { createArtifactHandler, type ArtifactRouteDeps } from '../../server/routes/artifact-route.js'
import { mountFallback, mountJs } from '../../server/routes/js-mount.js'

interface Teardown { teardown(fn: () => unknown): void }


export interface RouteKit {
  readonly origin: string
  readonly logger: RecordingLogger
  readonly counters: ArtifactCounters
  /** Jobs the recording enqueue received. */
  readonly jobs: MirrorJob[]
  /** Every decision passed to observe, with its facts. */
  readonly observed: { facts: VersionFacts, decision: Decision }[]
  /** How many times selectVersion was called. */
  selects(): number
  /** Resolves once `n` enqueue calls have been made (the route never awaits them). */
  enqueueCalls(n: number): Promise<void>
  readonly dispatcher: Dispatcher
  get(path: string, headers?: Record<string, string>): Promise<Answer>
  head(path: string, headers?: Record<string, string>): Promise<Answer>
}

export interface Answer {
  readonly status: number
  readonly headers: Record<string, string | string[] | undefined>
  readonly body: Buffer
}

export async function startArtifactRoute(t: Teardown, deps: Partial<ArtifactRouteDeps>): Promise<RouteKit> {
  const logger = new RecordingLogger()
  const counters = new ArtifactCounters()
  const jobs: MirrorJob[] = []
  const observed: { facts: VersionFacts, decision: Decision }[] = []
  let selects = 0
  let enqueues = 0
  const waiters: { n: number, resolve: () => void }[] = []
  const userEnqueue = deps.enqueue
  const userSelect = deps.selectVersion
  const handler = createArtifactHandler({
    ecosystem: 'js',
    privateClient: undefined,
    publicClient: undefined,
    evaluate: () => decision('admit'),
    integrityFloor: 'sha512',
    logger,
    counters,
    ...deps,
    selectVersion: async (name, file, signal) => {
      selects++
      if (userSelect === undefined) throw new Error('this test has no public selection')
      return userSelect(name, file, signal)
    },
    observe: (facts, d) => {
      observed.push({ facts, decision: d })
      deps.observe?.(facts, d)
    },
    enqueue: async (job) => {
      enqueues++
      for (const w of waiters.filter((w) => enqueues >= w.n)) w.resolve()
      if (userEnqueue !== undefined) return userEnqueue(job)
      jobs.push(job)
    },
  })
  const door = new FrontDoor({ host: '127.0.0.1', port: 0, logger })
  mountJs(door, { hopMarker: 'registry-proxy@test', handlers: { artifact: handler } })
  mountFallback(door)
  const port = await door.listen()
  const dispatcher = new Agent({ keepAliveTimeout: 10, pipelining: 0 })
  t.teardown(async () => {
    door.stopAccepting()
    await dispatcher.destroy()
  })
  const origin = `http://127.0.0.1:${port}`
  const send = async (method: 'GET' | 'HEAD', path: string, headers: Record<string, string> = {}): Promise<Answer> => {
    const res = await request(`${origin}${path}`, { method, headers, dispatcher })
    const body = Buffer.from(await res.body.arrayBuffer())
    return { status: res.statusCode, headers: res.headers, body }
  }
  return {
    origin, logger, counters, jobs, observed, dispatcher,
    selects: () => selects,
    enqueueCalls: (n) => enqueues >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve })),
    get: (path, headers) => send('GET', path, headers),
    head: (path, headers) => send('HEAD', path, headers),
  }
}
