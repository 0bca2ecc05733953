import t from 'tap'
import { outputBasisBytes, responseChargeBytes } from '../../engine/listing/output-basis.js'
import { basisOf, indexDocument } from '../../engine/packument/pipeline.js'
import { packument, utf8 } from '../packument/helpers.js'

t.test('one document: its own size', async (t) => {
  t.equal(outputBasisBytes(undefined, { bytes: 1000, versions: 10, lacks: 0 }), 1000)
  t.equal(outputBasisBytes({ bytes: 700, versions: 7, lacks: 0 }, undefined), 700)
  t.equal(outputBasisBytes(undefined, undefined), 0)
})

t.test('the larger of the estimate from the largest document and from the base', async (t) => {
  // Private (base) 100 B with 2 versions; public 1000 B with 10 versions, 9 of them new to the private side.
  // From the largest (public): 1000 + 100 * (1 private version the public lacks / 2) = 1050.
  // From the base (private): 100 + 1000 * 9 / 10 = 1000.
  t.equal(outputBasisBytes({ bytes: 100, versions: 2, lacks: 9 }, { bytes: 1000, versions: 10, lacks: 1 }), 1050)
  // Private (base) 1000 B lacking nothing; public 500 B lacking 5 of the private's 10.
  // From the largest (private, also the base): 1000 + 500 * 0 / 4 = 1000.
  t.equal(outputBasisBytes({ bytes: 1000, versions: 10, lacks: 0 }, { bytes: 500, versions: 4, lacks: 6 }), 1000)
  // Disjoint documents: each estimate adds the whole other document.
  t.equal(outputBasisBytes({ bytes: 300, versions: 3, lacks: 5 }, { bytes: 500, versions: 5, lacks: 3 }), 800)
  // The base estimate can be the larger one: a small private document lacking everything in a dense public one.
  t.equal(outputBasisBytes({ bytes: 400, versions: 1, lacks: 4 }, { bytes: 500, versions: 4, lacks: 1 }), 900)
  t.equal(outputBasisBytes({ bytes: 10, versions: 1, lacks: 0 }, { bytes: 5, versions: 0, lacks: 1 }), 10, 'an empty other document adds nothing')
})

t.test('computed from two indexes, and charged at 2.0 bytes per basis byte for js', async (t) => {
  const privText = utf8(JSON.stringify(packument('p', ['1.0.0', '1.1.0'])))
  const pubText = utf8(JSON.stringify(packument('p', ['1.0.0', '1.1.0', '1.2.0', '1.3.0'])))
  const priv = indexDocument([privText], false)
  const pub = indexDocument([pubText], false)
  const fromPublic = pubText.length // the public side lacks no private version
  const fromPrivate = privText.length + pubText.length * 2 / 4
  t.equal(basisOf(priv, pub), Math.ceil(Math.max(fromPublic, fromPrivate)))
  t.equal(basisOf(undefined, pub), pubText.length)
  t.equal(responseChargeBytes(1000), 2000)
  t.equal(responseChargeBytes(1000, 'py'), 1600)
})
