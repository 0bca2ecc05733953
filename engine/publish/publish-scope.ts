/**
 * The publish scope guard (SPEC.md 1.4, 4.3): which names this proxy may
 * relay a publish of. `mounts.<m>.publish.scopes` lists `@scope` entries and
 * exact unscoped names.
 *
 * - A name inside a listed `@scope` is owned: the operator owns the scope on
 *   the public registry too (or no one can publish there under it), so no
 *   public package can be shadowed by it and no public check is made.
 * - An exact unscoped name listed is allowed only while the public upstream
 *   has no package of that name (engine/publish/public-name-check.ts): a
 *   private `left-pad` would shadow the public one for every client of this
 *   proxy.
 * - Anything else is outside: 403 before anything reaches the target.
 *
 * Names are compared exactly as decoded from the route (`@acme/pkg`); npm
 * names of new packages are lower case, as the schema requires of entries.
 */
export type ScopeStanding = 'owned-scope' | 'listed-name' | 'outside'

export function scopeStanding(name: string, scopes: readonly string[]): ScopeStanding {
  if (name.startsWith('@')) {
    const slash = name.indexOf('/')
    if (slash < 0) return 'outside'
    const scope = name.slice(0, slash)
    return scopes.includes(scope) ? 'owned-scope' : 'outside'
  }
  return scopes.includes(name) ? 'listed-name' : 'outside'
}

/**
 * The first-party test the proxy (dependency-confusion guard, npm audit) and
 * the Dredger share: a name inside `publish.scopes`, owned scope or listed
 * name alike.
 */
export function ownsName(scopes: readonly string[]): (name: string) => boolean {
  return (name) => scopeStanding(name, scopes) !== 'outside'
}
