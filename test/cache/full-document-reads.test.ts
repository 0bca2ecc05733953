/**
 * SPEC.md 6.3: the local backend never retains full metadata; full reads
 * report misses or collapsed work. The packument service counts each
 * upstream document it reads on the full store; identical requests collapse
 * on the assembled store, so they read nothing more.
 */
import t from 'tap'
import { MetadataCache } from '../../engine/cache/metadata-cache.js'
import { ManualClock } from '../doubles/manual-clock.js'
import { AdmissionGate } from '../../engine/memory/gate.js'
import { PackumentService, type RenderJob, type SelectedArtifact } from '../../engine/packument/packument-service.js'
import type { PackumentOutcome } from '../../engine/packument/pipeline.js'
import type { UpstreamClient } from '../../engine/upstream/upstream-client.js'

/** An upstream that answers every document read with one small chunk. */
function upstream(): { client: UpstreamClient; reads: () => number } {
  let reads = 0
  const client = {
    fetchDocument: async () => {
      reads++
      return { kind: 'document', chunks: [new TextEncoder().encode('{"name":"left-pad","versions":{}}')], etag: '"u"' }
    },
  } as unknown as UpstreamClient
  return { client, reads: () => reads }
}

t.test('each upstream document read is one full-store miss; a joined request reads nothing', async (t) => {
  const clock = new ManualClock()
  const cache = new MetadataCache<SelectedArtifact>({ maxBytes: 1_000_000, maxEntries: 100, clock, selectedVersionSize: () => 1 })
  const gate = new AdmissionGate({ budgetBytes: 64 * 1024 * 1024, maxInFlight: 4, waitingRoom: 4 })
  const priv = upstream()
  const pub = upstream()
  let release!: () => void
  const rendering = new Promise<void>((resolve) => { release = resolve })
  const service = new PackumentService({
    ecosystem: 'js',
    privateClient: priv.client,
    publicClient: pub.client,
    cache,
    clock,
    generation: () => 1,
    observe: () => {},
    render: async (_job: RenderJob) => {
      await rendering
      return { body: new Uint8Array(3), etag: '"r"', selected: [], observations: [], dropped: [], advisoryAnswered: [], withholding: undefined, basisBytes: 0 } as unknown as PackumentOutcome
    },
  })
  const ask = async () => {
    const admission = await gate.enter()
    try {
      return await service.assemble({ packageName: 'left-pad', abbreviated: false, admission, signal: new AbortController().signal })
    } finally {
      admission.release()
    }
  }
  const both = Promise.all([ask(), ask()])
  // Let both requests reach the store before the render finishes.
  while (priv.reads() + pub.reads() < 2) await new Promise((resolve) => setImmediate(resolve))
  release()
  await both
  t.equal(priv.reads() + pub.reads(), 2, 'one read per upstream')
  const snapshot = cache.snapshot()
  t.same(snapshot.full, { hit: 0, miss: 2, collapsed: 0, refused: 0, residentBytes: 0, entries: 0 }, 'full reads are misses; nothing retained')
  t.match(snapshot.assembled, { miss: 1, collapsed: 1 }, 'the second request joined on the assembled store')
})
