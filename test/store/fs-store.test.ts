import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { ManualClock } from '../doubles/manual-clock.js'
import { FilesystemObjectStore } from '../../engine/store/filesystem-object-store.js'
import { objectStoreSuite } from './store.suite.js'

t.test('the shared object store suite, embedded filesystem store', async (t) => {
  objectStoreSuite(t, async () => {
    const root = await mkdtemp(join(tmpdir(), 'proxy-fs-store-'))
    const clock = new ManualClock()
    const store = await FilesystemObjectStore.open({ root, clock })
    return {
      store,
      tick: async () => { clock.advance(1000) },
      close: () => rm(root, { recursive: true, force: true }),
    }
  })
})
