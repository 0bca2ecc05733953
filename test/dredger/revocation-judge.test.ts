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

t.test('packages: an identity denial is judged with its selector; the history rules never remove', async (t) => {
  const judge = new RevocationJudge('js', [
    { rule: 'DenyIfTrustDowngrade' },
    { rule: 'DenyIfInstallScriptAdded', seconds: 0 },
    { rule: 'DenyIdentity', package: 'a', versions: '*', packages: ['b*'] },
    { rule: 'DenyIdentity', package: '@s/d', versions: '1.0.0', packages: ['@s/*'] },
  ])
  t.same(judge.candidates, ['@s/d'], 'a denial whose selector does not select its own package names no candidate')
  t.equal(judge.judge('a', '1.0.0'), undefined, 'and removes nothing')
  t.same(judge.judge('@s/d', '1.0.0'), { rule: 'mounts.js.rules[3] DenyIdentity @s/d@1.0.0' }, 'a selected one removes as before')
  t.equal(judge.judge('zzz', '1.0.0'), undefined, 'the history rules are not judged on an inventory')
})
