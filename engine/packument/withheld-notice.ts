/**
 * The `npm-notice` line of a packument from which the gate withheld
 * versions (issue 32 item 2; docs/npm.md "Withheld versions and npm
 * notice"). npm (npm-registry-fetch check-response) prints a registry's
 * `npm-notice` response header as `npm notice <value>`; without it, a range
 * only a withheld version satisfies ends in `ETARGET No matching version`
 * with no word of policy. One short line: how many versions were withheld,
 * the newest one and its refusal, and the why route for the others.
 *
 * The value is a header field the proxy writes from upstream text (the
 * version, the rule's message): only printable ASCII is kept (anything else
 * becomes `?`), and the line is cut at NOTICE_MAX_CHARS so a long reason
 * cannot make the header large.
 */
import { JS_MOUNT_PREFIX } from './tarball-url.js'
import { encodePackageName } from '../npm/names.js'

/** The header npm prints. */
export const NPM_NOTICE_HEADER = 'npm-notice'

/** The line's bound, in characters (all ASCII, so also bytes). */
export const NOTICE_MAX_CHARS = 400

export interface WithheldNoticeInput {
  readonly packageName: string
  /** Public versions withheld from the answer (MergeCounts.withheld). */
  readonly withheld: number
  /** The newest withheld version (semver precedence) and the sentence its refusal carries. */
  readonly newest: string
  readonly reason: string
  /** The base URL the answer's artifact URLs start with (no trailing slash needed). */
  readonly baseUrl: string
}

/** Printable ASCII only: a header value must not carry controls, and npm prints it to a terminal. */
function safe(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, '?')
}

/** The notice line, bounded and safe. */
export function withheldNotice(input: WithheldNoticeInput): string {
  const base = input.baseUrl.endsWith('/') ? input.baseUrl.slice(0, -1) : input.baseUrl
  const why = `${base}${JS_MOUNT_PREFIX}/-/why/${encodePackageName(input.packageName)}/${encodeURIComponent(input.newest)}`
  const count = input.withheld === 1 ? '1 version' : `${input.withheld} versions`
  const head = `${input.packageName}: ${count} withheld by policy; newest ${input.newest}: `
  const tail = `; why (any version): ${why}`
  const room = NOTICE_MAX_CHARS - head.length - tail.length
  // The reason gives way first: the count, the version and the route are what the user acts on.
  const reason = room <= 3 ? '' : input.reason.length <= room ? input.reason : `${input.reason.slice(0, room - 3)}...`
  const line = safe(`${head}${reason}${tail}`)
  return line.length <= NOTICE_MAX_CHARS ? line : `${line.slice(0, NOTICE_MAX_CHARS - 3)}...`
}
