import t from 'tap'
import { systemTimers } from '../../engine/memory/timers.js'
import { ManualTimers } from '../doubles/manual-timers.js'

t.test('manual timers fire in time order, on the clock they move', async (t) => {
  const timers = new ManualTimers()
  const start = timers.clock.now()
  const fired: string[] = []
  timers.after(30, () => fired.push(`b@${timers.clock.now() - start}`))
  timers.after(10, () => fired.push(`a@${timers.clock.now() - start}`))
  const every = timers.every(20, () => fired.push(`e@${timers.clock.now() - start}`))
  const cleared = timers.after(15, () => fired.push('never'))
  cleared.clear()
  cleared.clear()
  timers.advance(60)
  t.same(fired, ['a@10', 'e@20', 'b@30', 'e@40', 'e@60'])
  t.equal(timers.clock.now() - start, 60)
  every.clear()
  t.equal(timers.pendingCount, 0)
})

t.test('system timers run, clear and unref', async (t) => {
  // An unref'd timer alone would let the process exit, so this one stays ref'd.
  await new Promise<void>((resolve) => { systemTimers.after(1, resolve) })
  const unrefd = systemTimers.after(10_000, () => { t.fail('cleared before firing') })
  unrefd.unref()
  unrefd.clear()
  let ticks = 0
  await new Promise<void>((resolve) => {
    const handle = systemTimers.every(1, () => {
      if (++ticks === 2) { handle.clear(); resolve() }
    })
  })
  t.equal(ticks, 2)
  let fired = false
  systemTimers.after(1, () => { fired = true }).clear()
  await new Promise((resolve) => setTimeout(resolve, 5))
  t.equal(fired, false)
})
