/**
 * The Dredger's cycle: the per-cycle cap latches halted after the cap (what
 * is left counted `withheld_by_cap`, one error line naming cap, count and
 * rule), a latched Dredger removes nothing more, a failed removal is counted
 * and logged without counting toward the cap, and a version already gone is
 * `absent`. The inventory here is an in-memory stand-in with NpmInventory's
 * surface; test/dredger/npm-inventory.test.ts runs the real one.
 */
import t from 'tap'
import { DredgerCounters } from '../../engine/dredger/dredger-counters.js'
import { DREDGER_HALTED, DREDGER_REMOVAL_FAILED, DREDGER_REMOVED, Dredger, planRemovals } from '../../engine/dredger/dredger.js'
import type { InventoryName, NpmInventory, RemovalResult } from '../../engine/dredger/npm-inventory.js'
import { RevocationJudge } from '../../engine/dredger/revocation-judge.js'
import { ServiceError } from '../../engine/errors.js'
import { RecordingLogger } from '../doubles/recording-logger.js'

class MemoryInventory {
  readonly authority = 'memory'
  readonly removed: string[] = []
  constructor(readonly name: InventoryName, readonly held: Map<string, string[]>, readonly failing = new Set<string>()) {}
  async packages(): Promise<readonly string[]> { return [...this.held.keys()] }
  async versions(name: string): Promise<readonly string[]> { return this.held.get(name) ?? [] }
  async remove(name: string, version: string): Promise<RemovalResult> {
    if (this.failing.has(`${name}@${version}`)) throw new ServiceError('UPSTREAM_REFUSED', { data: { status: 403 } })
    const versions = this.held.get(name) ?? []
    if (!versions.includes(version)) return 'absent'
    this.held.set(name, versions.filter((v) => v !== version))
    this.removed.push(`${name}@${version}`)
    return 'removed'
  }
}

function setup(cap: number, held: Record<string, string[]>, failing: string[] = []) {
  const inventory = new MemoryInventory('mirror_target', new Map(Object.entries(held)), new Set(failing))
  const judge = new RevocationJudge('js', [{ rule: 'DenyIdentity', package: 'p', versions: '>=1.0.0' }])
  const logger = new RecordingLogger()
  const counters = new DredgerCounters()
  const halts: string[][] = []
  const dredger = new Dredger({
    mounts: [{ key: 'js', judge, inventories: [inventory as unknown as NpmInventory] }],
    maxRemovalsPerCycle: cap, counters, logger, onHalt: (keys) => halts.push([...keys]),
  })
  return { inventory, logger, counters, halts, dredger }
}

t.test('the cap: removes that many, withholds the rest, latches halted, removes nothing after', async (t) => {
  const { inventory, logger, counters, halts, dredger } = setup(2, { p: ['1.0.0', '1.0.1', '1.0.2'], other: ['1.0.0'] })
  const report = await dredger.runCycle('candidate')
  t.match(report, { planned: 3, removed: 2, halted: true })
  t.same(inventory.removed, ['p@1.0.0', 'p@1.0.1'])
  t.same(halts, [['js']])
  t.equal(dredger.halted, true)
  const [halt] = logger.find(DREDGER_HALTED)
  t.match(halt, { level: 'error', data: { cap: 2, count: 3, rule: 'mounts.js.rules[0] DenyIdentity p@>=1.0.0', mount: 'js' } })
  t.equal(logger.find(DREDGER_REMOVED).length, 2)
  t.match(counters.snapshot().mirror_target, { removed: 2, withheld_by_cap: 1, failed: 0 })

  const again = await dredger.runCycle('full_walk')
  t.match(again, { planned: 0, removed: 0, halted: true })
  t.same(inventory.removed, ['p@1.0.0', 'p@1.0.1'], 'a latched Dredger removes nothing')
})

t.test('a cycle within the cap does not halt; a failure is counted, logged, and not toward the cap', async (t) => {
  const { inventory, logger, counters, dredger } = setup(2, { p: ['1.0.0', '1.0.1', '0.9.0'] }, ['p@1.0.0'])
  const report = await dredger.runCycle('candidate')
  t.match(report, { planned: 2, removed: 1, failed: 1, halted: false })
  t.same(inventory.removed, ['p@1.0.1'])
  t.match(logger.find(DREDGER_REMOVAL_FAILED)[0], { level: 'error', data: { package: 'p', version: '1.0.0', inventory: 'mirror_target', code: 'UPSTREAM_REFUSED', status: 403 } })
  t.match(counters.snapshot().mirror_target, { removed: 1, failed: 1, withheld_by_cap: 0 })
  t.same(counters.snapshot().private_cache, { removed: 0, absent: 0, failed: 0, withheld_by_cap: 0 })
})

t.test('the full walk judges every listed package; a candidate cycle only the named ones', async (t) => {
  const inventory = new MemoryInventory('private_cache', new Map([['p', ['1.0.0']], ['q', ['1.0.0']]]))
  const judge = new RevocationJudge('js', [{ rule: 'DenyIdentity', package: 'p', versions: '1.0.0' }])
  const mounts = [{ key: 'js' as const, judge, inventories: [inventory as unknown as NpmInventory] }]
  const looked: string[] = []
  const versions = inventory.versions.bind(inventory)
  inventory.versions = async (name: string) => { looked.push(name); return versions(name) }
  const candidate = await planRemovals(mounts, 'candidate', new RecordingLogger())
  t.same(looked, ['p'])
  looked.length = 0
  const walk = await planRemovals(mounts, 'full_walk', new RecordingLogger())
  t.same(looked.sort(), ['p', 'q'])
  t.same(candidate.removals, walk.removals)
  t.same(walk.removals, [{ mount: 'js', package: 'p', version: '1.0.0', inventory: 'private_cache', rule: 'mounts.js.rules[0] DenyIdentity p@1.0.0' }])
})

t.test('first-party names (inside publish.scopes) are never planned, in either inventory', async (t) => {
  const inventory = new MemoryInventory('private_cache', new Map([['@acme/tool', ['1.0.0']], ['p', ['1.0.0']]]))
  const judge = new RevocationJudge('js', [
    { rule: 'DenyIdentity', package: '@acme/tool', versions: '1.0.0' },
    { rule: 'DenyIdentity', package: 'p', versions: '1.0.0' },
  ])
  const mounts = [{ key: 'js' as const, judge, inventories: [inventory as unknown as NpmInventory], firstParty: (name: string) => name.startsWith('@acme/') }]
  const plan = await planRemovals(mounts, 'full_walk', new RecordingLogger())
  t.same(plan.removals.map((r) => `${r.package}@${r.version}`), ['p@1.0.0'], 'the owned scope is left alone; the public copy is planned')
  t.equal(plan.unreadable, 0)
})

t.test('each removal invalidates its package in the metadata cache (docs/cache.md "Invalidation"); an absent version does not', async (t) => {
  const inventory = new MemoryInventory('mirror_target', new Map(Object.entries({ p: ['1.0.0', '1.0.1'] })))
  const judge = new RevocationJudge('js', [{ rule: 'DenyIdentity', package: 'p', versions: '>=1.0.0' }])
  const invalidated: string[] = []
  const dredger = new Dredger({
    mounts: [{ key: 'js', judge, inventories: [inventory as unknown as NpmInventory] }],
    maxRemovalsPerCycle: 10, counters: new DredgerCounters(), logger: new RecordingLogger(),
    onRemoved: async (mount, name) => { invalidated.push(`${mount} ${name} after ${inventory.removed.length} removed`) },
  })
  await dredger.runCycle('candidate')
  t.same(invalidated, ['js p after 1 removed', 'js p after 2 removed'], 'after each removal, not before')
  inventory.held.set('p', ['1.0.0'])
  inventory.removed.length = 0
  const absent = new MemoryInventory('mirror_target', new Map(Object.entries({ p: ['1.0.0'] })))
  absent.remove = async () => 'absent'
  const quiet = new Dredger({
    mounts: [{ key: 'js', judge, inventories: [absent as unknown as NpmInventory] }],
    maxRemovalsPerCycle: 10, counters: new DredgerCounters(), logger: new RecordingLogger(),
    onRemoved: async (mount, name) => { invalidated.push(`${mount} ${name}`) },
  })
  await quiet.runCycle('candidate')
  t.equal(invalidated.length, 2, 'nothing removed, nothing invalidated')
})
