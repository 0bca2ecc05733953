/**
 * `service [role] [subcommand] [--config FILE] [--json] [--dry-run]`.
 * Roles: proxy (default), mirror, pilot (`pilot compile` is one-shot),
 * dredger (`--dry-run`), and the `check-config` and `policy check FILE`
 * commands.
 */
export const ROLES = ['proxy', 'mirror', 'pilot', 'dredger'] as const
export type Role = (typeof ROLES)[number]

export type Command =
  | { readonly kind: 'role'; readonly role: Role; readonly oneShot: boolean; readonly dryRun: boolean; readonly configPath: string | undefined; readonly json?: boolean }
  | { readonly kind: 'check-config'; readonly json: boolean; readonly configPath: string | undefined }
  | { readonly kind: 'policy-check'; readonly file: string; readonly json: boolean }
  | { readonly kind: 'help' }
  | { readonly kind: 'usage-error'; readonly message: string }

export const USAGE = `usage: service [proxy|mirror|pilot [compile]|dredger [--dry-run [--json]]|check-config [--json]] [--config FILE]
       service policy check FILE [--json]

  proxy          serve the package routes (the default role)
  mirror         consume mirror jobs and publish them to the mirror target
  pilot          compile the advisory database on a schedule; 'pilot compile' runs once
  dredger        remove revoked versions; --dry-run previews without deleting (--json: JSON lines)
  check-config   validate the configuration and print it resolved, without starting a role
  policy check   validate a policy document (rules per mount, waivers) as a reload would
`

export function parseArgs(argv: readonly string[]): Command {
  const words: string[] = []
  let configPath: string | undefined
  let json = false
  let dryRun = false
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string
    if (arg === '--config') {
      const next = argv[++i]
      if (next === undefined) return { kind: 'usage-error', message: '--config needs a file' }
      configPath = next
    } else if (arg.startsWith('--config=')) configPath = arg.slice('--config='.length)
    else if (arg === '--json') json = true
    else if (arg === '--dry-run') dryRun = true
    else if (arg === '--help' || arg === '-h' || arg === 'help') return { kind: 'help' }
    else if (arg.startsWith('-')) return { kind: 'usage-error', message: `unknown option ${arg}` }
    else words.push(arg)
  }
  if (words[0] === 'policy') {
    const [, action, file, ...rest] = words
    if (action !== 'check') return { kind: 'usage-error', message: action === undefined ? 'policy needs a subcommand: check' : `unknown policy subcommand ${action}` }
    if (file === undefined) return { kind: 'usage-error', message: 'policy check needs a file' }
    if (rest.length > 0) return { kind: 'usage-error', message: `unexpected argument ${rest[0]}` }
    if (dryRun || configPath !== undefined) return { kind: 'usage-error', message: 'policy check takes only a file and --json' }
    return { kind: 'policy-check', file, json }
  }
  const [first = 'proxy', second, ...extra] = words
  if (extra.length > 0) return { kind: 'usage-error', message: `unexpected argument ${extra[0]}` }
  if (first === 'check-config') {
    if (second !== undefined) return { kind: 'usage-error', message: `unexpected argument ${second}` }
    if (dryRun) return { kind: 'usage-error', message: '--dry-run is for the dredger' }
    return { kind: 'check-config', json, configPath }
  }
  if (!(ROLES as readonly string[]).includes(first)) return { kind: 'usage-error', message: `unknown role ${first}` }
  const role = first as Role
  const oneShot = second === 'compile'
  if (second !== undefined && !(role === 'pilot' && oneShot)) return { kind: 'usage-error', message: `unexpected argument ${second}` }
  if (dryRun && role !== 'dredger') return { kind: 'usage-error', message: '--dry-run is for the dredger' }
  if (json && !dryRun) return { kind: 'usage-error', message: '--json is for check-config and dredger --dry-run' }
  return { kind: 'role', role, oneShot, dryRun, configPath, ...(json ? { json } : {}) }
}
