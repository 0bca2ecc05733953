/**
 * Child process for fs-store-crash.test.ts: starts a put of an endless body
 * into the store at $STORE_CRASH_ROOT, says `writing` once megabytes are on
 * disk, and waits to be killed with SIGKILL mid-write.
 *
 * tap also runs every file under test/ as a test file; without the variable
 * this file does nothing (tap reports it as "no tests found").
 */
import { Readable } from 'node:stream'
import { FilesystemObjectStore } from '../../engine/store/filesystem-object-store.js'

const root = process.env['STORE_CRASH_ROOT']
if (root !== undefined) {
  const store = await FilesystemObjectStore.open({ root })
  let sent = 0
  const endless = new Readable({
    read() {
      sent += 1
      if (sent === 64) process.stdout.write('writing\n')
      this.push(Buffer.alloc(64 * 1024, sent & 0xff))
    },
  })
  await store.put('artifact', endless, { generation: 'interrupted' })
}
