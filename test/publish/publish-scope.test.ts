import t from 'tap'
import { scopeStanding } from '../../engine/publish/publish-scope.js'

t.test('owned scopes, listed names, and everything else outside', async (t) => {
  const scopes = ['@acme', 'acme-tool']
  t.equal(scopeStanding('@acme/lib', scopes), 'owned-scope')
  t.equal(scopeStanding('@acmex/lib', scopes), 'outside', 'a scope is matched whole, not by prefix')
  t.equal(scopeStanding('@other/lib', scopes), 'outside')
  t.equal(scopeStanding('acme-tool', scopes), 'listed-name')
  t.equal(scopeStanding('acme-tool2', scopes), 'outside')
  t.equal(scopeStanding('left-pad', scopes), 'outside')
  t.equal(scopeStanding('@acme-tool/x', scopes), 'outside', 'a listed unscoped name owns no scope')
})
