/**
 * The credential sources of one process, one per configured name (SPEC.md
 * 5.5): every upstream or target naming the same credential shares one
 * source, so it is minted and counted once however many ecosystems use it.
 *
 * `prime` runs the eager construction mint of every source at boot (it
 * emits no refresh event and no expiry observation); a credential that
 * cannot be minted then is something the configuration names that cannot
 * be built in the live environment (BOOT_UNBUILDABLE, exit 2), reported by
 * name and code only, never with the token or the provider's output.
 */
import type { Clock } from '../../clock.js'
import type { CredentialConfig } from '../../config/config.js'
import { ServiceError } from '../../errors.js'
import { CredentialCounters } from './credential-counters.js'
import { CredentialSource, type Mint } from './credential-source.js'
import type { ForwardProxy } from '../forward-proxy.js'
import { managedRepoMint } from './managed-repo.js'
import { staticMint } from './registry-provider.js'
import { commandMint, fileMint } from './self-hosted.js'

export class CredentialRegistry {
  readonly counters: CredentialCounters
  readonly #sources = new Map<string, CredentialSource>()

  /** `forwardProxy`: what a managedRepo mint reaches CodeArtifact through (proxied-agents.ts); direct when unset. */
  constructor(credentials: readonly CredentialConfig[], clock: Clock, forwardProxy?: ForwardProxy) {
    this.counters = new CredentialCounters(clock)
    for (const credential of credentials) {
      this.#sources.set(credential.name, new CredentialSource({ label: credential.provider, mint: mintOf(credential, clock, forwardProxy), clock, counters: this.counters }))
    }
  }

  /** The source of a configured name; the loader has checked every reference. */
  source(name: string): CredentialSource {
    const source = this.#sources.get(name)
    if (source === undefined) throw new ServiceError('CONFIG_INVALID', { message: `no credential named ${JSON.stringify(name)}` })
    return source
  }

  /** The eager construction mint of every source in use. */
  async prime(names: Iterable<string>, signal?: AbortSignal): Promise<void> {
    for (const name of new Set(names)) {
      try {
        await this.source(name).prime(signal)
      } catch (error) {
        throw new ServiceError('BOOT_UNBUILDABLE', { message: `credential ${JSON.stringify(name)} could not be minted at boot`, data: { credential: name, cause: error instanceof Error ? error.name : 'unknown' } })
      }
    }
  }
}

function mintOf(credential: CredentialConfig, clock: Clock, forwardProxy: ForwardProxy | undefined): Mint {
  if (credential.provider === 'registry') return staticMint(credential.token)
  if (credential.provider === 'managedRepo') return managedRepoMint(credential, forwardProxy)
  return 'file' in credential ? fileMint(credential.file, clock) : commandMint(credential.command, clock)
}
