import t from 'tap'
import { getHeapStatistics } from 'node:v8'
import { oldSpaceFlagBytes, readV8Heap } from '../../engine/memory/heap-reading.js'

const MiB = 1024 * 1024

t.test('--max-old-space-size from NODE_OPTIONS and the command line; the command line wins', async (t) => {
  t.equal(oldSpaceFlagBytes([], undefined), undefined)
  t.equal(oldSpaceFlagBytes(['--max-old-space-size=278', '--max-semi-space-size=21'], undefined), 278 * MiB)
  t.equal(oldSpaceFlagBytes([], '--max-old-space-size=100 --enable-source-maps'), 100 * MiB)
  t.equal(oldSpaceFlagBytes(['--max_old_space_size=300'], '--max-old-space-size=100'), 300 * MiB)
  t.equal(oldSpaceFlagBytes(['--max-old-space-size=100', '--max-old-space-size=200'], undefined), 200 * MiB, 'the last one counts')
  t.equal(oldSpaceFlagBytes(['--max-old-space-size=0'], undefined), undefined)
  t.equal(oldSpaceFlagBytes(['--max-old-space-size'], ''), undefined)
})

t.test('the limit is the old generation when known, V8\'s heap_size_limit otherwise', async (t) => {
  const v8Limit = getHeapStatistics().heap_size_limit
  t.equal(readV8Heap(64 * MiB).limitBytes, 64 * MiB)
  t.equal(readV8Heap(undefined).limitBytes, v8Limit)
  t.equal(readV8Heap(0).limitBytes, v8Limit)
  t.equal(readV8Heap(v8Limit * 2).limitBytes, v8Limit, 'never above what V8 reports')
  const reading = readV8Heap()
  t.ok(reading.usedBytes > 0 && reading.usedBytes < reading.limitBytes)
})
