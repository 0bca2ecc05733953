/**
 * What a mirror target said when it refused (issue 30 item 4): the error
 * line of a permanent refusal names the target's own reason ("this package
 * is already present"), not just its status. Read from the refusal's body,
 * bounded: at most CAUSE_READ_BYTES are read (the rest is discarded), and
 * the reason kept is one line of at most CAUSE_MAX_CHARS characters.
 *
 * The body is the target's, answering a request that carried our
 * credential; a reason that echoes the credential back has it replaced
 * before it can reach a log line.
 */
import type { Dispatcher } from 'undici'

/** Bytes of a refusal's body read for its reason. */
export const CAUSE_READ_BYTES = 2048
/** Longest reason kept. */
export const CAUSE_MAX_CHARS = 200

/** JSON members registries put their reason in: npm and Verdaccio `error`, others `message` or `reason`. */
const REASON_MEMBERS = ['error', 'message', 'reason', 'detail'] as const

/** The refusal's reason, or undefined when the body gave none; the body is always consumed or destroyed. */
export async function refusalCause(body: Dispatcher.ResponseData['body'], secrets: readonly string[]): Promise<string | undefined> {
  const chunks: Buffer[] = []
  let bytes = 0
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      chunks.push(chunk)
      bytes += chunk.byteLength
      if (bytes >= CAUSE_READ_BYTES) break
    }
  } catch {
    return undefined
  } finally {
    body.destroy()
  }
  const text = Buffer.concat(chunks).subarray(0, CAUSE_READ_BYTES).toString('utf8')
  return clean(reasonIn(text), secrets)
}

function reasonIn(text: string): string {
  try {
    const parsed: unknown = JSON.parse(text)
    if (typeof parsed === 'object' && parsed !== null) {
      for (const member of REASON_MEMBERS) {
        const value = (parsed as Record<string, unknown>)[member]
        if (typeof value === 'string' && value.trim() !== '') return value
      }
    }
  } catch {
    // Not JSON (or cut at the read bound): the text itself.
  }
  // An HTML error page: its text, without the markup.
  return text.replace(/<[^>]*>/g, ' ')
}

function clean(reason: string, secrets: readonly string[]): string | undefined {
  let out = reason
  for (const secret of secrets) if (secret !== '') out = out.replaceAll(secret, '<redacted>')
  // One line of printable text: control characters (a forged log line) become spaces.
  out = out.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').replace(/\s+/g, ' ').trim()
  if (out === '') return undefined
  return out.length > CAUSE_MAX_CHARS ? `${out.slice(0, CAUSE_MAX_CHARS - 1)}…` : out
}
