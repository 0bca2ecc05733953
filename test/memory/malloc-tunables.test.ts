import t from 'tap'
import { MMAP_THRESHOLD_BYTES, mallocTunables } from '../../engine/memory/malloc-tunables.js'

t.test('the launcher holds glibc\'s mmap threshold at its starting 128 KiB unless the operator set one', async (t) => {
  t.equal(MMAP_THRESHOLD_BYTES, 128 * 1024)
  t.equal(mallocTunables(undefined), 'glibc.malloc.mmap_threshold=131072')
  t.equal(mallocTunables(''), 'glibc.malloc.mmap_threshold=131072')
  t.equal(mallocTunables('glibc.malloc.arena_max=2'), 'glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=131072', 'other tunables are kept')
  t.equal(mallocTunables('glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=1048576'), 'glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=1048576', 'the operator\'s threshold wins')
  t.equal(mallocTunables('glibc.malloc.mmap_threshold_x=1'), 'glibc.malloc.mmap_threshold_x=1:glibc.malloc.mmap_threshold=131072', 'a name that only starts alike is not the threshold')
})
