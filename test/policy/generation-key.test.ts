/**
 * The rules-and-database generation key (engine/policy/generation-key.ts):
 * two replicas (two mount policies over equal inputs) compute the same key;
 * it survives a restart (nothing in it counts swaps); it moves when the rules
 * or the serving advisory artifact change, including a re-push of the same
 * bytes (SPEC.md 3.5: the push age decides whether advisory rules answer).
 */
import t from 'tap'
import { AdvisorySlot } from '../../engine/advisory/consumer/advisory-slot.js'
import { canonicalJson, generationKey, rulesDigest } from '../../engine/policy/generation-key.js'
import { mountPolicy } from '../../engine/policy/mount-policy.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import { ManualClock } from '../doubles/manual-clock.js'
import { MemoryAdvisoryDatabase } from '../doubles/memory-advisory-database.js'
import { RecordingLogger } from '../doubles/recording-logger.js'

const quarantine: RuleConfig = { rule: 'AllowIfOlderThan', seconds: 604_800 }
const cve: RuleConfig = { rule: 'DenyIfCve', onUnavailable: 'skip' }

t.test('the rules digest ignores key order inside a rule, not the order of the rules', async (t) => {
  t.equal(canonicalJson({ b: 1, a: [2, { d: 3, c: null }] }), '{"a":[2,{"c":null,"d":3}],"b":1}')
  t.equal(rulesDigest([{ rule: 'DenyIfCve', onUnavailable: 'skip' }]), rulesDigest([{ onUnavailable: 'skip', rule: 'DenyIfCve' } as RuleConfig]))
  t.not(rulesDigest([quarantine, cve]), rulesDigest([cve, quarantine]), 'the first rule that decides wins: order is part of the policy')
  t.not(rulesDigest([quarantine]), rulesDigest([{ rule: 'AllowIfOlderThan', seconds: 604_801 }]))
})

t.test('the advisory part names the artifact and its push time', async (t) => {
  const digest = rulesDigest([cve])
  const at = new Date('2026-01-01T00:00:00Z')
  const base = generationKey({ rulesDigest: digest, advisory: { etag: '"a"', publishedAt: at } })
  t.match(base, new RegExp(`^${digest}\\.`))
  t.equal(generationKey({ rulesDigest: digest, advisory: { etag: '"a"', publishedAt: new Date(at) } }), base)
  t.not(generationKey({ rulesDigest: digest, advisory: { etag: '"b"', publishedAt: at } }), base, 'new bytes')
  t.not(generationKey({ rulesDigest: digest, advisory: { etag: '"a"', publishedAt: new Date(at.getTime() + 1000) } }), base, 'the same bytes pushed again')
  t.not(generationKey({ rulesDigest: digest, advisory: undefined }), base, 'no database loaded')
})

t.test('two replicas, and one restarted, key alike; a swap moves the key', async (t) => {
  const replica = () => {
    const slot = new AdvisorySlot()
    const policy = mountPolicy({ ecosystem: 'js', rules: [cve, quarantine], configuredMaxAgeSeconds: 0, slot, logger: new RecordingLogger(), clock: new ManualClock() })
    return { slot, policy }
  }
  const publishedAt = new Date('2026-01-01T00:00:00Z')
  const artifact = (etag: string) => ({ database: new MemoryAdvisoryDatabase({ ecosystem: 'js', advisories: [], publishedAt }), shared: new SharedArrayBuffer(8), publishedAt, etag })
  const a = replica()
  const b = replica()
  t.equal(a.policy.generationKey(), b.policy.generationKey(), 'empty slots')
  const empty = a.policy.generationKey()
  a.slot.swap(artifact('"1"'))
  // b swapped a rejected artifact first, so its swap counter differs: the key does not.
  b.slot.swap(artifact('"0"'))
  b.slot.swap(artifact('"1"'))
  t.not(a.slot.generation, b.slot.generation)
  t.equal(a.policy.generationKey(), b.policy.generationKey())
  t.not(a.policy.generationKey(), empty)
  const restarted = replica()
  restarted.slot.swap(artifact('"1"'))
  t.equal(restarted.policy.generationKey(), a.policy.generationKey(), 'a restart keys alike once the same artifact is in')
})
