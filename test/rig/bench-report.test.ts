import t from 'tap'
import { spawn } from 'node:child_process'
import { loadRows, loadWarnings, type MeasuredServer } from '../../bench/lib/load-rows.js'
import { pooledPercentileMs, type LatencyHistogram } from '../../bench/lib/load.js'
import { peakRssBytes, processTree, treePeakRssBytes } from '../../bench/lib/peak-rss.js'
import { formatScenario } from '../../bench/lib/report.js'
import { figuresOf, perRound } from '../../bench/lib/round-figures.js'
import { ChildPeer } from '../../bench/peers/child-peer.js'

const measured = (rps: number, mbps: number, p99: number, rss: number | undefined): MeasuredServer => ({
  load: { tool: 'wrk', requests: rps * 8, requestsPerSecond: rps, bytesPerSecond: mbps * 1e6, p99Ms: p99, non2xx: 0, errors: 0 },
  peakRssBytes: rss,
})

t.test('a table shows each baseline, its ratio, and why a baseline is unavailable', async (t) => {
  const rows = loadRows('GET', measured(900, 90, 10, 64 * 1024 * 1024), {
    nginx: measured(1000, 100, 5, 16 * 1024 * 1024),
    verdaccio: 'verdaccio did not start',
  })
  t.same(rows.map((r) => r.metric), ['GET req/s', 'GET throughput', 'GET p99 latency', 'peak RSS'])
  t.same(rows[0]?.baselines.nginx, { unit: 'req/s', better: 'higher', value: 1000 })
  const text = formatScenario('demo', { title: 'a demo', rows, peakRssBytes: 64 * 1024 * 1024, notes: ['a note'] })
  t.match(text, /^== demo: a demo/)
  t.match(text, /GET req\/s \(higher is better\)\s+\| 900 req\/s\s+\| 1000 req\/s \| 0\.90x \(worse\)\s+\| unavailable \| -/)
  t.match(text, /GET p99 latency \(lower is better\)\s+\| 10\.0 ms\s+\| 5\.00 ms\s+\| 2\.00x \(worse\)/)
  t.match(text, /peak RSS of the project's process: 64\.0 MiB/)
  t.match(text, /baseline verdaccio unavailable: verdaccio did not start/)
  t.match(text, /note: a note/)
})

t.test('no peak RSS row when the project has no figure', async (t) => {
  const rows = loadRows('GET', measured(1, 1, 1, undefined), { nginx: measured(1, 1, 1, 1) })
  t.notOk(rows.some((r) => r.metric === 'peak RSS'))
})

t.test('load warnings name failed answers', async (t) => {
  t.same(loadWarnings('x', { tool: 'autocannon', requests: 10, requestsPerSecond: 1, bytesPerSecond: 1, p99Ms: 1, non2xx: 2, errors: 1 }), [
    'x: 2 of 10 answers were not 2xx', 'x: 1 socket errors or timeouts',
  ])
})

t.test('peak RSS is read from /proc for a process and its children', async (t) => {
  const own = await peakRssBytes(process.pid)
  t.ok(own !== undefined && own > 1024 * 1024, 'this process has a peak')
  t.equal(await peakRssBytes(2 ** 22 + 12345), undefined, 'no such process')
  const child = new ChildPeer('sleeper', spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' }))
  t.teardown(() => child.stop())
  const tree = await processTree(process.pid)
  t.ok(tree.includes(child.pid), 'the child is in the tree')
  const total = await treePeakRssBytes(process.pid)
  t.ok(total !== undefined && total > own!, 'the tree sums its members')
})

t.test('a pooled percentile ranks the requests of every run together, by wrk\'s rule', async (t) => {
  // Two runs of 50 requests: the first all at 10 ms, the second at 20 ms but for one at 900 ms.
  const quiet: LatencyHistogram = [[10_000, 50]]
  const stall: LatencyHistogram = [[20_000, 49], [900_000, 1]]
  // Rank round(0.99 * 100 + 0.5) = 100: the slowest of the hundred.
  t.equal(pooledPercentileMs([quiet, stall], 99), 900)
  // Rank round(0.5 * 100 + 0.5) = 51: the first request of the second run.
  t.equal(pooledPercentileMs([quiet, stall], 50), 20)
  // The runs' order does not matter, and one run alone is that run's percentile.
  t.equal(pooledPercentileMs([stall, quiet], 50), 20)
  // Rank round(0.97 * 50 + 0.5) = 49: the last request before the stall.
  t.equal(pooledPercentileMs([stall], 97), 20)
  t.ok(Number.isNaN(pooledPercentileMs([[]], 99)), 'no requests, no percentile')
})

t.test('rounds sum up as the median throughput and the p99 of every request pooled', async (t) => {
  const round = (rps: number, p99: number, histogram?: LatencyHistogram): MeasuredServer => {
    const m = measured(rps, rps / 10, p99, undefined)
    return histogram === undefined ? m : { ...m, load: { ...m.load, latencyHistogram: histogram } }
  }
  // Three rounds of 100 requests, the second with three stalls of 950 ms.
  const runs = [round(300, 5, [[4_000, 100]]), round(100, 950, [[6_000, 97], [950_000, 3]]), round(200, 4, [[4_000, 100]])]
  const figures = figuresOf(runs)
  t.equal(figures.requestsPerSecond, 200, 'the median round, not the mean')
  t.equal(figures.bytesPerSecond, 20e6)
  // Rank round(0.99 * 300 + 0.5) = 298 of 300: inside the three 950 ms requests.
  t.equal(figures.p99Ms, 950)
  const calmer = figuresOf([round(300, 5, [[4_000, 100]]), round(100, 950, [[6_000, 99], [950_000, 1]]), round(200, 4, [[4_000, 100]])])
  t.equal(calmer.p99Ms, 6, 'one stall in 300 requests is past the rank')
  t.equal(figuresOf([round(1, 5), round(1, 9), round(1, 7), round(1, 8)]).p99Ms, 7.5, 'without histograms, the median of the rounds\' p99s')
  t.equal(perRound(runs, (m) => m.load.requestsPerSecond, 0), '300/100/200')
})
