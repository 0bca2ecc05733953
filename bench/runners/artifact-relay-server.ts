/**
 * A front door serving only the artifact route, in a process of its own so
 * the bench's load does not share its thread (bench/scenarios/artifact-relay.ts).
 * The private leg points at `process.argv[2]` (a plain http origin serving
 * `/{package}/-/{file}`); there is no public leg, no gate and no queue: this
 * measures the relay. Started with fork(); the port goes back over IPC, and
 * losing the IPC channel (the bench ended) ends the process.
 */
import { silentLogger } from '../../engine/log/logger.js'
import { UpstreamFetchCounters } from '../../engine/upstream/fetch-counters.js'
import { UpstreamClient } from '../../engine/upstream/upstream-client.js'
import { FrontDoor } from '../../server/http/front-door.js'
import { ArtifactCounters } from '../../server/routes/artifact-counters.js'
import { createArtifactHandler } from '../../server/routes/artifact-route.js'
import { mountFallback, mountJs } from '../../server/routes/js-mount.js'

const origin = process.argv[2]
if (origin === undefined) throw new Error('usage: artifact-relay-server <private upstream origin>')

const privateClient = new UpstreamClient({
  url: origin,
  trusted: true,
  maxResponseBytes: 1024 * 1024,
  proxyId: 'bench-proxy',
  logger: silentLogger,
  counters: new UpstreamFetchCounters(),
})
const handler = createArtifactHandler({
  ecosystem: 'js',
  privateClient,
  publicClient: undefined,
  selectVersion: async () => undefined,
  evaluate: () => { throw new Error('the bench has no public leg') },
  observe: () => {},
  integrityFloor: 'sha512',
  enqueue: async () => {},
  logger: silentLogger,
  counters: new ArtifactCounters(),
})
const door = new FrontDoor({ host: '127.0.0.1', port: 0, logger: silentLogger })
mountJs(door, { hopMarker: 'registry-proxy@bench', handlers: { artifact: handler } })
mountFallback(door)
const port = await door.listen()
process.on('disconnect', () => process.exit(0))
process.on('SIGTERM', () => process.exit(0))
process.send?.({ port })
