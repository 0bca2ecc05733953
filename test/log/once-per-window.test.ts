/**
 * OncePerWindow: one line per key per window, the lines left out counted
 * into the next one, and the keys remembered bounded.
 */
import t from 'tap'
import { OncePerWindow } from '../../engine/log/once-per-window.js'
import { ManualClock } from '../doubles/manual-clock.js'

t.test('one line per key per window; the next says how many were left out', async (t) => {
  const clock = new ManualClock()
  const lines = new OncePerWindow({ windowMs: 1000, maxKeys: 10, clock })
  t.equal(lines.take('a'), 0)
  t.equal(lines.take('a'), undefined)
  t.equal(lines.take('b'), 0, 'another key is its own')
  clock.advance(999)
  t.equal(lines.take('a'), undefined)
  clock.advance(1)
  t.equal(lines.take('a'), 2, 'two left out since the last line')
  t.equal(lines.take('a'), undefined)
})

t.test('past maxKeys the key logged longest ago is forgotten', async (t) => {
  const clock = new ManualClock()
  const lines = new OncePerWindow({ windowMs: 1000, maxKeys: 2, clock })
  lines.take('a')
  lines.take('b')
  lines.take('c')
  t.equal(lines.take('b'), undefined, 'b is still remembered')
  t.equal(lines.take('c'), undefined, 'c is still remembered')
  t.equal(lines.take('a'), 0, 'a was forgotten: its line comes early')
})
