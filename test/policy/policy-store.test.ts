/**
 * The policy document in the object store (issue 31 item 1), on the
 * embedded store and on a real S3 server (s3rver): a boot without the
 * object runs the configured rules and picks the object up at a poll; a
 * changed object is applied whole and moves the generation; an unchanged
 * one costs a conditional HEAD and changes nothing; a bad object is refused
 * whole with the old policy still in force; a store that cannot be read, or
 * an invalid object, at boot is CONFIG_INVALID (exit 2).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { AdvisorySlot } from '../../engine/advisory/consumer/advisory-slot.js'
import type { Config } from '../../engine/config/config.js'
import { loadConfig } from '../../engine/config/load.js'
import { parsePolicyDocument } from '../../engine/config/policy-document.js'
import { POLICY_OBJECT_KEY } from '../../engine/config/policy-source.js'
import { publishPolicy } from '../../engine/config/stored-policy.js'
import type { VersionFacts } from '../../engine/policy/decision.js'
import { mountPolicy } from '../../engine/policy/mount-policy.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import { FilesystemObjectStore } from '../../engine/store/filesystem-object-store.js'
import type { ObjectStore } from '../../engine/store/object-store.js'
import { createS3Client, S3ObjectStore } from '../../engine/store/s3-object-store.js'
import { bootPolicy, POLICY_APPLIED, POLICY_NOT_IN_STORE, POLICY_REFUSED, PolicyReloader, withPolicyRules } from '../../server/roles/policy-reloader.js'
import { ManualClock } from '../doubles/manual-clock.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { startS3 } from '../peers/s3.js'

const NOW = Date.parse('2026-01-01T00:00:00Z')
const quarantine: RuleConfig[] = [{ rule: 'AllowIfOlderThan', seconds: 7 * 86_400 }]
const fresh: VersionFacts = { ecosystem: 'js', name: 'left-pad', version: '1.0.1', publishedAt: new Date(NOW - 3_600_000) }

interface StoreCase {
  /** The configuration's `store` section, and a client on the same store for the test's own writes. */
  open(t: Test): Promise<{ store: Config['store']; direct: ObjectStore }>
}

const embedded: StoreCase = {
  async open(t) {
    const path = await mkdtemp(join(tmpdir(), 'policy-store-'))
    t.teardown(() => rm(path, { recursive: true, force: true }))
    return { store: { kind: 'embedded', path, prefix: '' } as unknown as Config['store'], direct: await FilesystemObjectStore.open({ root: path }) }
  },
}

let s3Runs = 0
function s3Case(peer: () => Awaited<ReturnType<typeof startS3>>): StoreCase {
  return {
    async open(t) {
      const p = peer()
      const prefix = `policy-${++s3Runs}/`
      const client = createS3Client({ region: p.region, endpoint: p.endpoint, credentials: { accessKeyId: p.accessKeyId, secretAccessKey: p.secretAccessKey } })
      t.teardown(() => client.destroy())
      // The role's own client takes its credentials from the SDK's default chain: the environment here (restored by the parent test).
      process.env['AWS_ACCESS_KEY_ID'] = p.accessKeyId
      process.env['AWS_SECRET_ACCESS_KEY'] = p.secretAccessKey
      return {
        store: { kind: 's3', bucket: p.bucket, prefix, region: p.region, endpoint: p.endpoint } as unknown as Config['store'],
        direct: new S3ObjectStore({ client, bucket: p.bucket, prefix }),
      }
    },
  }
}

async function fixture(t: Test, storeCase: StoreCase) {
  const { store, direct } = await storeCase.open(t)
  const clock = new ManualClock(NOW)
  const logger = new RecordingLogger()
  const config = { policy: { store: true, pollSeconds: 0 }, store, mounts: { js: { rules: quarantine } } } as unknown as Config
  return { config, clock, logger, direct }
}

async function publish(store: ObjectStore, text: string): Promise<void> {
  const read = parsePolicyDocument(text, false, NOW)
  if (!read.ok) throw new Error(read.problems.join('; '))
  await publishPolicy(store, read.document, read.digest)
}

function storeCases(t: Test, name: string, storeCase: () => StoreCase): void {
  t.test(`${name}: a boot without the object, then push, poll, a bad object, a vanished one`, async (t) => {
    const { config, clock, logger, direct } = await fixture(t, storeCase())
    const boot = await bootPolicy(config, clock, logger)
    if (boot === undefined) throw new Error('no boot policy')
    t.match(logger.find(POLICY_NOT_IN_STORE), [{ level: 'warn', data: { object: new RegExp(`${POLICY_OBJECT_KEY}$`) } }], 'booted on the configured rules, said at warn')
    const effective = withPolicyRules(config, boot)
    const policy = mountPolicy({ ecosystem: 'js', rules: effective.mounts.js?.rules ?? [], waivers: boot.document.waivers ?? [], configuredMaxAgeSeconds: 0, slot: new AdvisorySlot(), logger, clock })
    const reloader = new PolicyReloader({ boot, mounts: new Map([['js', { policy, configured: quarantine }]]), pollSeconds: 0, logger, clock })
    const verdict = (): string => policy.evaluator.evaluate(fresh, 'admission').verdict
    t.equal(verdict(), 'deny', 'the configured quarantine')

    await reloader.reload('poll')
    t.same(reloader.counts, { applied: 0, unchanged: 1, refused: 0 }, 'still no object: nothing to say at each poll')
    t.equal(logger.find(POLICY_REFUSED).length, 0)

    await publish(direct, 'mounts: { js: { rules: [ { rule: AllowIfOlderThan, seconds: 0 } ] } }\n')
    const before = policy.generation()
    await reloader.reload('poll')
    t.same(reloader.counts, { applied: 1, unchanged: 1, refused: 0 })
    t.equal(verdict(), 'admit', 'the store\'s rules')
    t.not(policy.generation(), before, 'the generation moved')
    t.match(logger.find(POLICY_APPLIED).at(-1)?.data, { trigger: 'poll', object: new RegExp(`${POLICY_OBJECT_KEY}$`), mounts: ['js'], waivers: 0 })

    await reloader.reload('poll')
    t.same(reloader.counts, { applied: 1, unchanged: 2, refused: 0 }, 'the same object: unchanged')

    // Written past the commands (they validate first): refused whole, the rules in force stay.
    const applied = policy.generation()
    await direct.put(POLICY_OBJECT_KEY, Buffer.from(JSON.stringify({ mounts: { js: { rules: [{ rule: 'AllowIfOlderThan', seconds: -1 }] } }, waivers: [{ package: 'a' }] })), {})
    await reloader.reload('poll')
    t.equal(verdict(), 'admit', 'the policy in force stays')
    t.equal(policy.generation(), applied)
    const [refused] = logger.find(POLICY_REFUSED)
    t.match(refused, { level: 'error', data: { trigger: 'poll', object: new RegExp(`${POLICY_OBJECT_KEY}$`), message: /refused, \d+ problems: .*seconds.*waivers/ } })
    await reloader.reload('poll')
    t.equal(logger.find(POLICY_REFUSED).length, 2, 'a bad object left in place is refused at each poll')

    await direct.put(POLICY_OBJECT_KEY, Buffer.from('not json'), {})
    await reloader.reload('sighup')
    t.match(logger.find(POLICY_REFUSED)[2]?.data, { trigger: 'sighup', problems: [/not valid JSON/] })

    await direct.delete(POLICY_OBJECT_KEY)
    await reloader.reload('poll')
    t.match(logger.find(POLICY_REFUSED)[3]?.data, { problems: [/holds no policy document/] }, 'a deleted object is refused: the policy in force stays')
    t.equal(verdict(), 'admit')
    t.same(reloader.counts, { applied: 1, unchanged: 2, refused: 4 })
  })

  t.test(`${name}: boot with an invalid object is CONFIG_INVALID`, async (t) => {
    const { config, clock, logger, direct } = await fixture(t, storeCase())
    await direct.put(POLICY_OBJECT_KEY, Buffer.from('{"mounts":{"js":{"rules":[{"rule":"Nope"}]}}}'), {})
    await t.rejects(bootPolicy(config, clock, logger), { code: 'CONFIG_INVALID', message: new RegExp(`policy document .*${POLICY_OBJECT_KEY} refused, 1 problem: mounts\\.js\\.rules`) })
    await publish(direct, 'waivers: []\n')
    t.match(await bootPolicy(config, clock, logger), { document: { waivers: [] } }, 'a valid object boots')
  })
}

t.test('embedded store', async (t) => { storeCases(t, 'embedded store', () => embedded) })

t.test('S3 (s3rver)', async (t) => {
  const peer = await startS3()
  t.teardown(() => peer.stop())
  const keys = { id: process.env['AWS_ACCESS_KEY_ID'], secret: process.env['AWS_SECRET_ACCESS_KEY'] }
  t.teardown(() => {
    if (keys.id === undefined) delete process.env['AWS_ACCESS_KEY_ID']
    else process.env['AWS_ACCESS_KEY_ID'] = keys.id
    if (keys.secret === undefined) delete process.env['AWS_SECRET_ACCESS_KEY']
    else process.env['AWS_SECRET_ACCESS_KEY'] = keys.secret
  })
  storeCases(t, 'S3', () => s3Case(() => peer))
  t.test('a store that cannot be reached at boot is CONFIG_INVALID', async (t) => {
    const clock = new ManualClock(NOW)
    const store = { kind: 's3', bucket: 'b', prefix: '', region: 'us-east-1', endpoint: 'http://127.0.0.1:9' } as unknown as Config['store']
    const config = { policy: { store: true, pollSeconds: 0 }, store, mounts: { js: { rules: quarantine } } } as unknown as Config
    await t.rejects(bootPolicy(config, clock, new RecordingLogger()), { code: 'CONFIG_INVALID', message: /refused, 1 problem: cannot read s3:\/\/b\/policy\/document\.json/ })
  })
})

t.test('policy.store and policy.file are exclusive', async (t) => {
  const loaded = loadConfig({ configPath: undefined, env: { SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: 'https://upstream.invalid/', SERVICE_POLICY__STORE: 'true', SERVICE_POLICY__FILE: '/etc/policy.yaml' } })
  t.match(loaded, { ok: false, problems: [{ path: 'policy.store', message: /policy\.store and policy\.file are exclusive/ }] })
})
