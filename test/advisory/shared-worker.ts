/**
 * Worker side of the SharedArrayBuffer test in compiled-database.test.ts:
 * opens the posted artifact in place and answers lookups.
 */
import { parentPort } from 'node:worker_threads'
import { openSharedAdvisoryArtifact } from '../../engine/advisory/artifact/compiled-database.js'

interface Ask { shared: SharedArrayBuffer; lookups: Array<[string, string]> }

parentPort?.once('message', (msg: Ask) => {
  try {
    const db = openSharedAdvisoryArtifact(msg.shared)
    const affecting = msg.lookups.map(([n, v]) => db.affecting(n, v).map((m) => ({ ...m })))
    const remediating = msg.lookups.map(([n, v]) => db.remediating(n, v).map((m) => m.id))
    // Proof that the memory is shared, not copied: the worker writes a byte the parent reads.
    const view = new Uint8Array(msg.shared)
    Atomics.store(view, 112, 42) // a reserved header byte (108 holds format 2's details ref)
    parentPort?.postMessage({ affecting, remediating, rowCount: db.metadata.rowCount })
  } catch (err) {
    parentPort?.postMessage({ error: String(err) })
  }
})
