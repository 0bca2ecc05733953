/**
 * Resolution: the checked document made into the Config every role reads.
 * `defaultDocument` applies the schema's defaults; `resolveConfig` adds the
 * defaults that depend on something else (config.ts lists them), lays the
 * value out in the resolved schema's shape, decodes its secrets into
 * BearerToken values and freezes it (STYLE.md rule 5). Decoding asserts the
 * value against the resolved schema, so the type every consumer reads is
 * what boot produced. Nothing here refuses: checks.ts has run.
 */
import Value from 'typebox/value'
import { CREDENTIAL_SHAPES, ResolvedConfigSchema, type Config, type DefaultedDocument } from './config.js'
import type { PublicUpstreamUrls } from './npm-client-registry.js'
import { ConfigSchema, DEFAULT_INTEGRITY_FLOOR, MOUNT_KEYS, type MountKey } from './schema.js'
import { layout } from './settled.js'

/** A py mount's guard against dependency confusion is on unless configured off. */
const DEFAULT_PRIVATE_HIDES_PUBLIC = true

export function defaultDocument(merged: Record<string, unknown>): DefaultedDocument {
  return Value.Default(ConfigSchema, structuredClone(merged)) as DefaultedDocument
}

export function resolveConfig(d: DefaultedDocument, publicUrls: PublicUpstreamUrls, documentPath: string | undefined): Config {
  const mounts: Partial<Record<MountKey, unknown>> = {}
  for (const key of MOUNT_KEYS) {
    const m = d.mounts[key]
    if (m === undefined) continue
    const url = publicUrls[key]
    mounts[key] = {
      ...m,
      key,
      upstreams: {
        private: m.upstreams.private,
        public: url?.url === undefined ? undefined : {
          ...m.upstreams.public,
          url: url.url,
          urlOrigin: url.origin,
          respectTarballHost: m.upstreams.public.respectTarballHost ?? d.respectUpstreamTarballHost,
        },
      },
      integrityFloor: m.integrityFloor ?? DEFAULT_INTEGRITY_FLOOR[key],
      privateHidesPublic: m.privateHidesPublic ?? DEFAULT_PRIVATE_HIDES_PUBLIC,
    }
  }
  const resolved = {
    ...d,
    server: { ...d.server, baseUrl: resolvedBaseUrl(d.server), baseUrlConfigured: d.server.baseUrl !== undefined },
    credentials: d.credentials.map(withProviderDefaults),
    mounts,
    source: { document: documentPath },
  }
  return deepFreeze(Value.Decode(ResolvedConfigSchema, layout(ResolvedConfigSchema, resolved)))
}

/** `{base_url}` (SPEC.md 2.11): the configured address without trailing slashes, else the loopback one of the port. */
export function resolvedBaseUrl(server: DefaultedDocument['server']): string {
  return (server.baseUrl ?? `http://localhost:${server.port}`).replace(/\/+$/, '')
}

/** A credential with its provider's defaults (a managedRepo token's lifetime). */
function withProviderDefaults(entry: DefaultedDocument['credentials'][number]): unknown {
  const shape = CREDENTIAL_SHAPES[entry.provider].find((s) => Value.Check(s, entry))
  return shape === undefined ? entry : Value.Default(shape, structuredClone(entry))
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const child of Object.values(value)) deepFreeze(child)
  }
  return value
}
