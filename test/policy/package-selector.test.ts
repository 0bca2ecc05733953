import t from 'tap'
import { packageSelector, selectorProblem } from '../../engine/policy/package-selector.js'

function selects(patterns: string[], ecosystem: 'js' | 'py' = 'js'): (name: string) => boolean {
  const selector = packageSelector(ecosystem, patterns)
  if (selector === undefined) throw new Error('no selector')
  return (name) => selector.matches(name)
}

t.test('unset selects every package (no selector at all)', async (t) => {
  t.equal(packageSelector('js', undefined), undefined)
})

t.test('js: exact names, scopes and globs within one segment', async (t) => {
  const m = selects(['left-pad', '@types/*', 'eslint-plugin-*', '@babel/plugin-*', '@*/core'])
  t.ok(m('left-pad'))
  t.notOk(m('left-pad2'), 'an exact name is exact')
  t.notOk(m('Left-pad'), 'names compare case-sensitively')
  t.ok(m('@types/node'))
  t.ok(m('@types/react-dom'))
  t.notOk(m('@types2/node'), 'another scope')
  t.notOk(m('types'), 'the scope name alone is no package of it')
  t.ok(m('eslint-plugin-react'))
  t.ok(m('eslint-plugin-'), '* may be empty')
  t.notOk(m('@acme/eslint-plugin-x'), 'an unscoped glob never selects a scoped name')
  t.ok(m('@babel/plugin-transform-runtime'))
  t.ok(m('@babel/core'), '@*/core selects it')
  t.notOk(m('@babel/preset-env'))
  t.ok(m('@angular/core'), 'a glob in the scope segment')
  t.notOk(m('@angular/core-x'))
  const star = selects(['*'])
  t.ok(star('anything'))
  t.notOk(star('@scope/anything'), '* never crosses the / of a scoped name')
  const dots = selects(['a.b*'])
  t.ok(dots('a.bc'))
  t.notOk(dots('axbc'), 'a . is a literal dot, not any character')
})

t.test('py: PEP 503 normalised on both sides', async (t) => {
  const m = selects(['Django-*', 'requests'], 'py')
  t.ok(m('django-rest-framework'))
  t.ok(m('Django_Rest'))
  t.ok(m('REQUESTS'))
  t.notOk(m('requests-oauthlib'))
})

t.test('the same answer for repeated names (the last answer is remembered)', async (t) => {
  const m = selects(['a*'])
  t.ok(m('ab'))
  t.ok(m('ab'))
  t.notOk(m('b'))
  t.ok(m('ab'))
})

t.test('bad patterns are named', async (t) => {
  for (const bad of ['', '@types', '@types/', '/x', 'a/b', '@a/b/c', 'has space', 'x?', '[ab]', '{a,b}', '@/x', 'a'.repeat(215)]) {
    t.type(selectorProblem('js', bad), 'string', JSON.stringify(bad.slice(0, 20)))
  }
  for (const bad of ['@scope/x', 'a/b', 'a b']) t.type(selectorProblem('py', bad), 'string', `py ${bad}`)
  for (const good of ['left-pad', '@types/*', 'a*b*c', '*', '@*/*', 'x.y_z~1']) t.equal(selectorProblem('js', good), undefined, good)
  t.throws(() => packageSelector('js', ['a/b']), TypeError)
})

t.test('in the evaluator: a rule limited by packages abstains for others, reading nothing', async (t) => {
  const { createEvaluator } = await import('../../engine/policy/evaluator.js')
  const evaluator = createEvaluator([
    { rule: 'DenyIfCve', packages: ['@acme/*'] },
    { rule: 'AllowIfOlderThan', seconds: 86_400, packages: ['@types/*'] },
    { rule: 'AllowIfOlderThan', seconds: 30 * 86_400 },
  ], { ecosystem: 'js', database: undefined, clock: { now: () => Date.UTC(2026, 0, 10) }, maxAgeSeconds: 86_400 })
  const twoDaysOld = new Date(Date.UTC(2026, 0, 8))
  const types = evaluator.evaluate({ ecosystem: 'js', name: '@types/node', version: '1.0.0', publishedAt: twoDaysOld }, 'admission')
  t.match(types, { verdict: 'admit', ruleIndex: 1 }, 'the relaxed quarantine of @types/*')
  t.same(types.advisory, [], 'DenyIfCve, limited to @acme/*, never consulted (no outage observed)')
  const other = evaluator.evaluate({ ecosystem: 'js', name: 'left-pad', version: '1.0.0', publishedAt: twoDaysOld }, 'admission')
  t.match(other, { verdict: 'deny', rule: undefined }, 'the long quarantine for everything else')
  const acme = evaluator.evaluate({ ecosystem: 'js', name: '@acme/x', version: '1.0.0', publishedAt: twoDaysOld }, 'admission')
  t.equal(acme.verdict, 'unavailable', 'a selected package reaches the advisory rule, which has no database')
})
