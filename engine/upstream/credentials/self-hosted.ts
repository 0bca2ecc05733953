/**
 * The `selfHosted` provider's mints (SPEC.md 5.5): a token read from a file
 * or printed by a command the operator names, with the expiry it reports,
 * read again on demand (the shapes Vault agents and Kubernetes projected
 * service-account tokens give).
 *
 * - File: the whole file, trimmed, is the token. A JWT carries its expiry
 *   in `exp`; any other token is treated as expiring READ_AGAIN_MS after it
 *   was read, so a rotated file is picked up on demand.
 * - Command: run without a shell; its standard output is either JSON
 *   `{"token": "...", "expiresAt": "<ISO 8601>"}` (or `expiresIn` seconds),
 *   or the bare token (then as a file's). A non-zero exit, a timeout or an
 *   empty token is a mint failure; the output is never logged.
 */
import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import type { Clock } from '../../clock.js'
import { BearerToken } from '../../secret.js'
import type { Mint, MintedCredential } from './credential-source.js'

/** How long a token that reports no expiry is used before the file or command is read again. */
export const READ_AGAIN_MS = 60_000
export const COMMAND_TIMEOUT_MS = 30_000

export function fileMint(path: string, clock: Clock): Mint {
  return async (signal) => interpret((await readFile(path, { encoding: 'utf8', signal })).trim(), clock)
}

export function commandMint(command: readonly string[], clock: Clock): Mint {
  const [file, ...args] = command
  if (file === undefined) throw new TypeError('a selfHosted command needs at least the program')
  return (signal) => new Promise<MintedCredential>((resolve, reject) => {
    execFile(file, args, { signal, timeout: COMMAND_TIMEOUT_MS, encoding: 'utf8', maxBuffer: 64 * 1024 }, (error, stdout) => {
      // The error's message may quote the output; only its code goes on.
      if (error !== null) {
        reject(new Error(`the credential command failed (${String((error as NodeJS.ErrnoException).code ?? 'exit')})`))
        return
      }
      try {
        resolve(interpret(stdout.trim(), clock))
      } catch (failure) {
        reject(failure)
      }
    })
  })
}

function interpret(text: string, clock: Clock): MintedCredential {
  if (text.startsWith('{')) {
    let parsed: { token?: unknown, expiresAt?: unknown, expiresIn?: unknown }
    try {
      parsed = JSON.parse(text) as typeof parsed
    } catch {
      throw new Error('the credential output is not JSON')
    }
    if (typeof parsed.token !== 'string' || parsed.token === '') throw new Error('the credential output has no token')
    const expiresAt = typeof parsed.expiresAt === 'string' ? Date.parse(parsed.expiresAt)
      : typeof parsed.expiresIn === 'number' ? clock.now() + parsed.expiresIn * 1000
        : undefined
    if (expiresAt !== undefined && Number.isNaN(expiresAt)) throw new Error('the credential expiry is not a date')
    return { token: new BearerToken(parsed.token), expiresAt: expiresAt ?? clock.now() + READ_AGAIN_MS }
  }
  if (text === '') throw new Error('the credential is empty')
  return { token: new BearerToken(text), expiresAt: jwtExpiry(text) ?? clock.now() + READ_AGAIN_MS }
}

/** The `exp` claim of a JWT, in ms; undefined for anything else. */
function jwtExpiry(token: string): number | undefined {
  const parts = token.split('.')
  if (parts.length !== 3) return undefined
  try {
    const claims = JSON.parse(Buffer.from(parts[1] as string, 'base64url').toString('utf8')) as { exp?: unknown }
    return typeof claims.exp === 'number' ? claims.exp * 1000 : undefined
  } catch {
    return undefined
  }
}
