/**
 * `service [role] [subcommand] [--config FILE] [--json] [--dry-run]`.
 * Roles: proxy (default), mirror, pilot (`pilot compile` is one-shot),
 * dredger (`--dry-run`), and the `check-config` and `policy` commands
 * (`check FILE`, and `push FILE`, `waive`, `freeze`, `show` on the store's
 * document).
 */
export const ROLES = ['proxy', 'mirror', 'pilot', 'dredger'] as const
export type Role = (typeof ROLES)[number]

export type Command =
  | { readonly kind: 'role'; readonly role: Role; readonly oneShot: boolean; readonly dryRun: boolean; readonly configPath: string | undefined; readonly json?: boolean }
  | { readonly kind: 'check-config'; readonly json: boolean; readonly configPath: string | undefined }
  | { readonly kind: 'policy-check'; readonly file: string; readonly json: boolean }
  | { readonly kind: 'policy-push'; readonly file: string; readonly configPath: string | undefined }
  | { readonly kind: 'policy-show'; readonly configPath: string | undefined }
  | { readonly kind: 'policy-waive'; readonly spec: string; readonly reason: string; readonly expires: string; readonly by: string | undefined; readonly mount: 'js' | 'py' | undefined; readonly configPath: string | undefined }
  | { readonly kind: 'policy-freeze'; readonly at: string; readonly configPath: string | undefined }
  | { readonly kind: 'help' }
  | { readonly kind: 'usage-error'; readonly message: string }

export const USAGE = `usage: service [proxy|mirror|pilot [compile]|dredger [--dry-run [--json]]|check-config [--json]] [--config FILE]
       service policy check FILE [--json]
       service policy push FILE [--config FILE]
       service policy waive PKG@RANGE --reason TEXT --expires INSTANT|DURATION [--by NAME] [--mount js|py] [--config FILE]
       service policy freeze --at INSTANT|now [--config FILE]
       service policy show [--config FILE]

  proxy          serve the package routes (the default role)
  mirror         consume mirror jobs and publish them to the mirror target
  pilot          compile the advisory database on a schedule; 'pilot compile' runs once
  dredger        remove revoked versions; --dry-run previews without deleting (--json: JSON lines)
  check-config   validate the configuration and print it resolved, without starting a role
  policy check   validate a policy document (rules per mount, waivers) as a reload would
  policy push    validate a policy document and publish it to the store (policy.store)
  policy waive   add a waiver to the store's policy document
  policy freeze  put DenyIfPublishedAfter at the top of every mount's rules in the store's document
  policy show    print the store's policy document
`

/** Options that take a value and belong to the policy commands. */
const POLICY_OPTIONS = ['reason', 'expires', 'by', 'mount', 'at'] as const
type PolicyOption = (typeof POLICY_OPTIONS)[number]

export function parseArgs(argv: readonly string[]): Command {
  const words: string[] = []
  let configPath: string | undefined
  let json = false
  let dryRun = false
  const options: Partial<Record<PolicyOption, string>> = {}
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string
    const option = POLICY_OPTIONS.find((o) => arg === `--${o}` || arg.startsWith(`--${o}=`))
    if (option !== undefined) {
      const value = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[++i]
      if (value === undefined) return { kind: 'usage-error', message: `--${option} needs a value` }
      options[option] = value
    } else if (arg === '--config') {
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
  if (words[0] === 'policy') return parsePolicyArgs(words.slice(1), options, { configPath, json, dryRun })
  const stray = Object.keys(options)[0]
  if (stray !== undefined) return { kind: 'usage-error', message: `--${stray} is for the policy commands` }
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

/** `service policy <check|push|waive|freeze|show> ...`. */
function parsePolicyArgs(words: readonly string[], options: Partial<Record<PolicyOption, string>>, flags: { configPath: string | undefined; json: boolean; dryRun: boolean }): Command {
  const [action, ...args] = words
  const { configPath, json } = flags
  const allowed: Record<string, readonly PolicyOption[]> = { check: [], push: [], show: [], waive: ['reason', 'expires', 'by', 'mount'], freeze: ['at'] }
  const own = action === undefined ? undefined : allowed[action]
  if (own === undefined) return { kind: 'usage-error', message: action === undefined ? 'policy needs a subcommand: check, push, waive, freeze or show' : `unknown policy subcommand ${action}` }
  const stray = (Object.keys(options) as PolicyOption[]).find((o) => !own.includes(o))
  if (stray !== undefined) return { kind: 'usage-error', message: `--${stray} is not an option of policy ${action}` }
  if (flags.dryRun) return { kind: 'usage-error', message: '--dry-run is for the dredger' }
  if (json && action !== 'check') return { kind: 'usage-error', message: `--json is not an option of policy ${action}` }
  const positional = action === 'check' || action === 'push' || action === 'waive' ? 1 : 0
  if (args.length > positional) return { kind: 'usage-error', message: `unexpected argument ${args[positional]}` }
  const [first] = args
  if (positional === 1 && first === undefined) return { kind: 'usage-error', message: action === 'waive' ? 'policy waive needs PKG@RANGE' : `policy ${action} needs a file` }
  switch (action) {
    case 'check':
      if (configPath !== undefined) return { kind: 'usage-error', message: 'policy check takes only a file and --json' }
      return { kind: 'policy-check', file: first as string, json }
    case 'push':
      return { kind: 'policy-push', file: first as string, configPath }
    case 'show':
      return { kind: 'policy-show', configPath }
    case 'freeze':
      if (options.at === undefined) return { kind: 'usage-error', message: 'policy freeze needs --at INSTANT (or --at now)' }
      return { kind: 'policy-freeze', at: options.at, configPath }
    default: {
      const { reason, expires, by, mount } = options
      if (reason === undefined || expires === undefined) return { kind: 'usage-error', message: 'policy waive needs --reason and --expires' }
      if (mount !== undefined && mount !== 'js' && mount !== 'py') return { kind: 'usage-error', message: `--mount is js or py, not ${mount}` }
      return { kind: 'policy-waive', spec: first as string, reason, expires, by, mount, configPath }
    }
  }
}
