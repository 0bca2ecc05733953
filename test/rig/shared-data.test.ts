import t from 'tap'
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { readPackument, readPackumentBytes, sharedDataDir } from '../../bench/peers/shared-data.js'

t.test('the shared data folder sits beside the repository unless SHARED_DATA_DIR says otherwise', async (t) => {
  t.ok(existsSync(join(sharedDataDir(), 'README.md')), `README.md in ${sharedDataDir()}`)
  const saved = process.env.SHARED_DATA_DIR
  t.teardown(() => {
    if (saved === undefined) delete process.env.SHARED_DATA_DIR
    else process.env.SHARED_DATA_DIR = saved
  })
  process.env.SHARED_DATA_DIR = '/somewhere/else'
  t.equal(sharedDataDir(), '/somewhere/else')
})

t.test('packuments read plain and gzipped, scoped names included', async (t) => {
  const leftPad = await readPackument('left-pad')
  t.equal(Object.keys(leftPad.versions).length, 15, 'the version count the data README gives')
  t.equal(leftPad['dist-tags'].latest, '1.3.0')
  const types = await readPackument('@types/node')
  t.equal(types.name, '@types/node')
  t.equal(Object.keys(types.versions).length, 2346, 'the version count the data README gives')
  const lodash = await readPackument('lodash')
  t.match(lodash.versions['4.17.21']?.dist.tarball, /^https:\/\/public-registry\.example\//)
  t.equal(createHash('sha256').update(await readPackumentBytes('express')).digest('hex').length, 64)
})
