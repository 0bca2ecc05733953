/**
 * The `managedRepo` provider's mint (SPEC.md 5.5): a short-lived registry
 * token from AWS CodeArtifact's GetAuthorizationToken, with the expiry it
 * reports. AWS credentials come from the SDK's default chain (environment,
 * web identity, container or instance role). The CodeArtifact client is
 * built on the first mint, at boot, against the live environment; nothing
 * that only checks the configuration (`service check-config`) builds it.
 *
 * The SDK's own retries are off (one attempt per mint): the credential
 * source counts failures for its breaker, and retries hidden inside a mint
 * would make five failures mean fifteen calls.
 */
import type { CodeartifactClient } from '@aws-sdk/client-codeartifact'
import { BearerToken } from '../../secret.js'
import type { Mint } from './credential-source.js'
import type { ForwardProxy } from '../forward-proxy.js'
import { sdkRequestHandler } from '../proxied-agents.js'

export interface ManagedRepoOptions {
  readonly domain: string
  readonly domainOwner: string | undefined
  readonly region: string
  readonly endpoint: string | undefined
  readonly durationSeconds: number
}

/** `forwardProxy`: the proxy CodeArtifact is reached through (proxied-agents.ts); direct when unset. */
export function managedRepoMint(options: ManagedRepoOptions, forwardProxy?: ForwardProxy): Mint {
  let client: CodeartifactClient | undefined
  return async (signal) => {
    // Loaded at the first mint, not at import: only a managedRepo credential pays for the SDK.
    const { CodeartifactClient, GetAuthorizationTokenCommand } = await import('@aws-sdk/client-codeartifact')
    client ??= new CodeartifactClient({ region: options.region, maxAttempts: 1, ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }), ...sdkRequestHandler(forwardProxy) })
    let answer
    try {
      answer = await client.send(new GetAuthorizationTokenCommand({
        domain: options.domain,
        ...(options.domainOwner === undefined ? {} : { domainOwner: options.domainOwner }),
        durationSeconds: options.durationSeconds,
      }), { abortSignal: signal })
    } catch (error) {
      // Only the AWS error's name goes on: its message may quote the request.
      throw new Error(`CodeArtifact GetAuthorizationToken failed (${error instanceof Error ? error.name : 'unknown'})`)
    }
    if (typeof answer.authorizationToken !== 'string' || answer.authorizationToken === '') throw new Error('CodeArtifact answered no authorization token')
    const expiresAt = answer.expiration instanceof Date && Number.isFinite(answer.expiration.getTime()) ? answer.expiration.getTime() : undefined
    return { token: new BearerToken(answer.authorizationToken), ...(expiresAt === undefined ? {} : { expiresAt }) }
  }
}
