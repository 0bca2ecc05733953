/**
 * SPEC.md 8.1's table, "Memory admission", pinned: every charge of the gate
 * reads ADMISSION_CHARGES, so a rate that drifts from SPEC.md fails here.
 */
import t from 'tap'
import { ADMISSION_CHARGES } from '../../engine/memory/admission-charges.js'
import { listingChunkCharge } from '../../engine/listing/charged-fetch.js'
import { responseChargeBytes } from '../../engine/listing/output-basis.js'
import { AdmissionGate } from '../../engine/memory/gate.js'
import { ManualTimers } from '../doubles/manual-timers.js'

t.test('the rows of SPEC.md 8.1, figure for figure', async (t) => {
  t.same(ADMISSION_CHARGES, {
    // "entering, before a CPU slot is taken | one 1 MiB step"
    entryStepBytes: 1024 * 1024,
    // "full metadata read (a listing), per decompressed source byte | 1.1 bytes for js, 3.2 bytes for py"
    sourcePerByte: { js: 1.1, py: 3.2 },
    // "a listing's response, per byte of its output basis | 2.0 bytes for js, 1.6 bytes for py"
    responsePerBasisByte: { js: 2.0, py: 1.6 },
  })
})

t.test('frozen all the way down', async (t) => {
  t.ok(Object.isFrozen(ADMISSION_CHARGES))
  t.ok(Object.isFrozen(ADMISSION_CHARGES.sourcePerByte))
  t.ok(Object.isFrozen(ADMISSION_CHARGES.responsePerBasisByte))
})

t.test('the charges read it', async (t) => {
  const gate = new AdmissionGate({ budgetBytes: 8 * 1024 * 1024, maxInFlight: 1, waitingRoom: 0, timers: new ManualTimers() })
  const admission = await gate.enter()
  t.equal(admission.chargedBytes, 1024 * 1024, 'the gate\'s default entry step')
  t.equal(listingChunkCharge(admission, 'js')(new Uint8Array(1000)), undefined, 'taken at once while it fits')
  t.equal(admission.chargedBytes, 1024 * 1024 + 1100, 'a js source byte at 1.1')
  listingChunkCharge(admission, 'py')(new Uint8Array(1000))
  t.equal(admission.chargedBytes, 1024 * 1024 + 1100 + 3200, 'a py source byte at 3.2')
  admission.release()
  t.equal(responseChargeBytes(1000, 'js'), 2000, 'a js basis byte at 2.0')
  t.equal(responseChargeBytes(1000, 'py'), 1600, 'a py basis byte at 1.6')
})
