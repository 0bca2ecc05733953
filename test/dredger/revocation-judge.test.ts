/**
 * RevocationJudge: only identity denials that apply in the revocation phase
 * remove; `appliesTo: [admission]` never does; unset means both phases; the
 * first identity rule that matches is the one named.
 */
import t from 'tap'
import { RevocationJudge } from '../../engine/dredger/revocation-judge.js'

t.test('unset appliesTo and [revocation] revoke; [admission] never does', async (t) => {
  const judge = new RevocationJudge('js', [
    { rule: 'AllowIfOlderThan', seconds: 0 },
    { rule: 'DenyIdentity', package: 'a', versions: '1.0.1' },
    { rule: 'DenyIdentity', package: 'b', versions: '>=2.0.0', appliesTo: ['revocation'] },
    { rule: 'DenyIdentity', package: 'c', versions: '3.0.0', appliesTo: ['admission'] },
    { rule: 'DenyIfCve', appliesTo: ['revocation'] },
  ])
  t.same([...judge.candidates].sort(), ['a', 'b'], 'an admission-only denial names no candidate')
  t.same(judge.judge('a', '1.0.1'), { rule: 'mounts.js.rules[1] DenyIdentity a@1.0.1' })
  t.equal(judge.judge('a', '1.0.0'), undefined, 'another version of the package stays')
  t.same(judge.judge('b', '2.5.0-rc.1'), { rule: 'mounts.js.rules[2] DenyIdentity b@>=2.0.0' }, 'a range holds its pre-releases')
  t.equal(judge.judge('c', '3.0.0'), undefined, 'appliesTo [admission] never removes')
  t.equal(judge.judge('zzz', '1.0.0'), undefined, 'deny by default is no removal, nor an advisory rule')
})

t.test('widening the same rule to both phases makes it revoke', async (t) => {
  const judge = new RevocationJudge('js', [{ rule: 'DenyIdentity', package: 'c', versions: '3.0.0', appliesTo: ['admission', 'revocation'] }])
  t.same(judge.candidates, ['c'])
  t.same(judge.judge('c', '3.0.0'), { rule: 'mounts.js.rules[0] DenyIdentity c@3.0.0' })
  t.same(judge.judge('c', 'v3.0.0'), { rule: 'mounts.js.rules[0] DenyIdentity c@3.0.0' }, 'a loose key npm would install as 3.0.0')
})
