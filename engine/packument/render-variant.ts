/**
 * What a packument answer's bytes depend on besides the package, the form
 * and the policy generation, so that each is rendered and retained apart:
 * - `baseUrl`: the base its artifact URLs start with, when they follow the
 *   request's origin (`server.baseUrl` unset; issue 32 item 5); undefined is
 *   the mount's configured (or derived) base;
 * - `view`: `audit` lists the versions the gate withheld, marked as such, for
 *   npm's audit computation (issue 32 item 1; docs/npm.md "npm audit");
 *   `install`, the default, leaves them out.
 */
import type { PackumentView } from '../npm/npm-command.js'

export type { PackumentView }

export interface RenderVariant {
  readonly baseUrl?: string | undefined
  readonly view?: PackumentView | undefined
}

/** The assembled key's variant part (engine/cache/metadata-cache.ts assembledKey): '' for the default. */
export function variantKey(variant: RenderVariant): string {
  const base = variant.baseUrl ?? ''
  return variant.view === 'audit' ? `${base} audit` : base
}
