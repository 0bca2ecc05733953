import t, { type Test } from 'tap'
import { ChunkRuns, RUN_BYTES } from '../../engine/upstream/chunk-runs.js'

function pieces(total: number, size: number): Buffer[] {
  const out: Buffer[] = []
  for (let at = 0; at < total; at += size) {
    const piece = Buffer.allocUnsafe(Math.min(size, total - at))
    for (let i = 0; i < piece.length; i++) piece[i] = (at + i) % 251
    out.push(piece)
  }
  return out
}

function collect(input: readonly Uint8Array[], expectedBytes?: number): Uint8Array[] {
  const runs = new ChunkRuns(expectedBytes)
  for (const piece of input) runs.push(piece)
  return runs.finish()
}

function ownsItsBuffer(t: Test, run: Uint8Array, what: string): void {
  t.ok(run.byteOffset === 0 && run.buffer.byteLength === run.byteLength, `${what} spans its own buffer (${run.byteLength} bytes): it moves to the pool uncopied`)
}

t.test('a body of one piece comes back as it came, uncopied; an empty body is no chunk', async (t) => {
  const only = pieces(5000, 5000)[0]!
  const out = collect([only])
  t.equal(out.length, 1)
  t.equal(out[0], only, 'the same object')
  t.same(collect([]), [])
  t.same(collect([Buffer.alloc(0), Buffer.alloc(0)]), [], 'empty pieces add nothing')
})

t.test('a larger body comes back as whole runs, then a tail block of its own size', async (t) => {
  const total = 5 * RUN_BYTES + 12_345
  const input = pieces(total, 16 * 1024 + 7)
  const out = collect(input)
  t.equal(out.length, 6)
  out.slice(0, 5).forEach((run, i) => t.equal(run.byteLength, RUN_BYTES, `run ${i}`))
  t.equal(out[5]!.byteLength, 12_345, 'the tail')
  t.ok(Buffer.concat(out).equals(Buffer.concat(input)), 'the same bytes in the same order')
  out.forEach((run, i) => ownsItsBuffer(t, run, `run ${i}`))
  for (const run of out) t.notOk(input.some((piece) => piece.buffer === run.buffer), 'no run shares a piece\'s memory')
})

t.test('a small body of several pieces is copied once, into a block of its size', async (t) => {
  const input = pieces(40_000, 16 * 1024)
  const out = collect(input)
  t.equal(out.length, 1)
  t.equal(out[0]!.byteLength, 40_000)
  ownsItsBuffer(t, out[0]!, 'the block')
  t.ok(Buffer.concat(out).equals(Buffer.concat(input)))
})

t.test('an announced length sizes the first run; a body longer than announced still arrives whole', async (t) => {
  const input = pieces(40_000, 16 * 1024)
  const exact = collect(input, 40_000)
  t.equal(exact.length, 1)
  t.equal(exact[0]!.buffer.byteLength, 40_000, 'filled exactly, no tail copy')
  const longer = collect(pieces(RUN_BYTES + 100_000, 16 * 1024), 50_000)
  t.same(longer.map((r) => r.byteLength), [50_000, RUN_BYTES, 100_000 - 50_000])
  t.ok(Buffer.concat(longer).equals(Buffer.concat(pieces(RUN_BYTES + 100_000, 16 * 1024))))
  const huge = collect(pieces(3 * RUN_BYTES, 64 * 1024), 3 * RUN_BYTES)
  t.same(huge.map((r) => r.byteLength), [RUN_BYTES, RUN_BYTES, RUN_BYTES], 'an announced length above a run still makes runs')
  for (const bad of [0, -1, Number.NaN, 1.5]) t.equal(collect(pieces(300_000, 16 * 1024), bad)[0]!.byteLength, RUN_BYTES, `announced ${bad} is ignored`)
})

t.test('a piece larger than a run is split across runs', async (t) => {
  const input = [pieces(10, 10)[0]!, pieces(2 * RUN_BYTES + 5, 2 * RUN_BYTES + 5)[0]!]
  const out = collect(input)
  t.same(out.map((r) => r.byteLength), [RUN_BYTES, RUN_BYTES, 15])
  t.ok(Buffer.concat(out).equals(Buffer.concat(input)))
})
