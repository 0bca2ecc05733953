/**
 * Registry signatures and provenance (issue 17 item 4), relayed from the
 * public upstream so that `npm audit signatures` verifies through the proxy:
 *
 * - `GET /js/-/npm/v1/keys`: the public upstream's signing keys, the
 *   document npm falls back to when Sigstore's TUF repository has no keys
 *   for the registry it talks to (npm `verify-signatures.js`), which is the
 *   case for this proxy's own address.
 * - `GET /js/-/npm/v1/attestations/{package}@{version}`: the version's
 *   attestation bundles, only for a public version the mount's rules admit
 *   (the artifact route's selection and gate; a refusal is the artifact
 *   route's refusal), so the proxy tells nothing about versions it withholds.
 *
 * `dist.signatures` and `dist.attestations` come through the packument as
 * the upstream wrote them (the render keeps every manifest field but the
 * tarball URL). `dist.attestations.url` is not rewritten: npm and pacote
 * read only its path and ask their own registry for it (npm 11 resolves
 * that path against the registry's origin, earlier releases append it to
 * the registry URL), so the mount also answers the path at the origin's
 * root (js-mount.ts) and under `/js`.
 *
 * Both bodies are bounded (SIGNING_KEYS_MAX_BYTES, ATTESTATIONS_MAX_BYTES)
 * and charged to the memory gate chunk by chunk; the upstream's document is
 * relayed byte for byte as JSON.
 */
import { isServiceError, ServiceError, toServiceError } from '../../engine/errors.js'
import type { Clock } from '../../engine/clock.js'
import type { AdmissionGate } from '../../engine/memory/gate.js'
import { PAUSE_CAP_UPSTREAM_READ_MS } from '../../engine/memory/gate.js'
import { encodePackageName, validatePackageName } from '../../engine/npm/names.js'
import type { Decision, VersionFacts } from '../../engine/policy/decision.js'
import { explainRefusal } from '../../engine/policy/explain.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import type { UpstreamClient } from '../../engine/upstream/upstream-client.js'
import type { Exchange } from '../http/exchange.js'
import { refusalOf } from './artifact-answers.js'
import type { SelectedArtifact } from './artifact-route.js'

/** npm's keys document is a few hundred bytes. */
export const SIGNING_KEYS_MAX_BYTES = 256 * 1024
/** A version's bundles (provenance and publish attestations) are tens of kilobytes. */
export const ATTESTATIONS_MAX_BYTES = 4 * 1024 * 1024

export interface SignatureRouteDeps {
  readonly publicClient: Pick<UpstreamClient, 'fetchRegistryPath'> | undefined
  readonly gate: AdmissionGate
  readonly selectVersion: (packageName: string, filename: string, signal: AbortSignal) => Promise<SelectedArtifact | undefined>
  readonly evaluate: (facts: VersionFacts) => Decision
  readonly observe: (facts: VersionFacts, decision: Decision) => void
  readonly rules: () => readonly RuleConfig[]
  readonly clock: Clock
}

/** A version as the route carries it: printable, no separators, bounded (the why route's rule). */
const VERSION = /^[0-9A-Za-z.+_-]{1,256}$/

const noKeys = (): ServiceError => new ServiceError('UPSTREAM_MISS', { message: 'the public upstream publishes no signing keys' })

export function createSignatureHandlers(deps: SignatureRouteDeps): {
  signingKeys(exchange: Exchange): Promise<void>
  attestations(exchange: Exchange, pkg: string, version: string): Promise<void>
} {
  /** Reads `path` from the public upstream under `maxBytes` and the gate, and relays it. */
  const relay = async (ex: Exchange, path: string, what: string, maxBytes: number, miss: () => ServiceError, signal: AbortSignal): Promise<void> => {
    const head = ex.method === 'HEAD'
    const client = deps.publicClient
    if (client === undefined) {
      ex.respondError(miss(), { head })
      return
    }
    const admission = await deps.gate.enter(signal)
    try {
      let bytes = 0
      const result = await client.fetchRegistryPath(path, what, {
        accept: 'application/json',
        signal,
        onChunk: (chunk) => {
          bytes += chunk.byteLength
          if (bytes > maxBytes) throw new ServiceError('RESPONSE_TOO_LARGE', { message: `the public upstream's ${what} exceeds ${maxBytes} bytes` })
          if (admission.tryCharge(chunk.byteLength)) return undefined
          return admission.charge(chunk.byteLength, { timeoutMs: PAUSE_CAP_UPSTREAM_READ_MS, signal })
        },
      })
      if (ex.closed) return
      if (result.kind !== 'document') {
        ex.respondError(miss(), { head })
        return
      }
      const body = Buffer.concat(result.chunks)
      try {
        JSON.parse(body.toString('utf8'))
      } catch {
        throw new ServiceError('UPSTREAM_DECODE', { data: { reason: `${what} is not JSON` } })
      }
      ex.respond(200, { 'content-type': 'application/json' }, body)
    } finally {
      admission.release()
    }
  }

  const answer = async (ex: Exchange, work: (signal: AbortSignal) => Promise<void>): Promise<void> => {
    const controller = new AbortController()
    ex.onClose(() => controller.abort())
    try {
      await work(controller.signal)
    } catch (error) {
      if (ex.closed) return
      ex.respondError(isServiceError(error) ? error : new ServiceError('INTERNAL', { cause: error }), { head: ex.method === 'HEAD' })
    }
  }

  return {
    signingKeys: (ex) => answer(ex, (signal) => relay(ex, '-/npm/v1/keys', 'signing keys', SIGNING_KEYS_MAX_BYTES, noKeys, signal)),

    attestations: (ex, pkg, version) => answer(ex, async (signal) => {
      const head = ex.method === 'HEAD'
      let name: string
      try {
        name = validatePackageName(pkg)
        if (!VERSION.test(version)) throw new ServiceError('BAD_PACKAGE_NAME', { message: 'not a version' })
      } catch (error) {
        ex.respondError(toServiceError(error, 'BAD_PACKAGE_NAME'), { head })
        return
      }
      const unknown = (): ServiceError => new ServiceError('UPSTREAM_MISS', { message: `${name}@${version} has no attestations this proxy can relay: it is not a public version, or the public upstream has none` })
      // npm names a tarball after the package's last segment and the version (the why route's selection).
      const selected = await deps.selectVersion(name, `${name.split('/').pop() ?? name}-${version}.tgz`, signal)
      if (ex.closed) return
      if (selected === undefined || selected.version !== version) {
        ex.respondError(unknown(), { head })
        return
      }
      const facts: VersionFacts = { ...selected.history, ecosystem: 'js', name, version, publishedAt: selected.publishedAt }
      const decision = deps.evaluate(facts)
      deps.observe(facts, decision)
      const refusal = refusalOf(decision, explainRefusal(decision, facts, deps.rules(), deps.clock.now()))
      if (refusal !== undefined) {
        ex.respondError(refusal, { head })
        return
      }
      await relay(ex, `-/npm/v1/attestations/${encodePackageName(name)}@${encodeURIComponent(version)}`, 'attestations', ATTESTATIONS_MAX_BYTES, unknown, signal)
    }),
  }
}
