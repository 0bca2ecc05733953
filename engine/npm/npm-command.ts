/**
 * The `npm-command` request header: npm (npm-registry-fetch) names the
 * command it runs on every request it makes (`install`, `ci`, `audit`...);
 * pnpm and yarn send none. The proxy reads it for two things (issue 32):
 * `audit` asks for the packument's audit view (engine/packument/
 * render-variant.ts), and its presence says the client prints an
 * `npm-notice` (engine/packument/withheld-notice.ts).
 */
export const NPM_COMMAND_HEADER = 'npm-command'

/** Which packument a request gets (engine/packument/render-variant.ts). */
export type PackumentView = 'install' | 'audit'

/** `npm audit` and `npm audit fix` compute ranges and fixes from packuments: they get the audit view. */
export function packumentViewOf(npmCommand: string | undefined): PackumentView {
  return npmCommand?.trim().toLowerCase() === 'audit' ? 'audit' : 'install'
}
