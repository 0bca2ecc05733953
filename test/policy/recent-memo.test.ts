import t from 'tap'

import { RecentMemo } from '../../engine/policy/recent-memo.js'

t.test('keeps the most recent pairs up to its capacity, replacing the oldest', async (t) => {
  const memo = new RecentMemo<string, number>(3, (a, b) => a.toLowerCase() === b.toLowerCase())
  t.equal(memo.get('a'), undefined)
  memo.set('a', 1)
  memo.set('b', 2)
  memo.set('c', 3)
  t.equal(memo.get('A'), 1, 'compared by the given equality')
  t.equal(memo.get('c'), 3)
  t.equal(memo.get('b'), 2)
  memo.set('d', 4)
  t.equal(memo.get('a'), undefined, 'the oldest pair gave way')
  t.equal(memo.get('d'), 4)
  t.equal(memo.get('b'), 2)
  t.equal(memo.get('c'), 3)
  memo.set('e', 5)
  t.equal(memo.get('b'), undefined, 'then the next oldest')
  t.same(['c', 'd', 'e'].map((k) => memo.get(k)), [3, 4, 5])
  t.equal(memo.get('x'), undefined, 'a miss after hits is still a miss')
})
