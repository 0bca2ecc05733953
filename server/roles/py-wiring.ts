/**
 * The `py` mount's part of the proxy's composition (issue 16), called once
 * by startProxy, as `attachJsMount` is for `js`: its upstream clients, its
 * project-page service on the shared pool and cache budget, and its routes.
 * The policy is built by the root with engine/policy/mount-policy.ts.
 */
import { DEFAULT_PUBLISH_MAX_BODY_BYTES } from '../../engine/config/schema.js'
import { ServiceError } from '../../engine/errors.js'
import { metadataUrl, type FileRequestKind } from '../../engine/pypi/file-url.js'
import type { PageFile } from '../../engine/pypi/project-page.js'
import { ProjectPageRecord } from '../../engine/pypi/project-page-record.js'
import { ProjectService } from '../../engine/pypi/project-service.js'
import { DEFAULT_READ_LIMITS, type Hashes } from '../../engine/pypi/simple-model.js'
import { SNAPSHOT_KEYS } from '../../engine/telemetry/snapshot-keys.js'
import type { UpstreamClient } from '../../engine/upstream/upstream-client.js'
import { runPyPageTask } from '../../workers/py-page-client.js'
import type { PyPageOutcome } from '../../workers/py-page-task.js'
import { ArtifactCounters } from '../routes/artifact-counters.js'
import { createArtifactHandler, type ArtifactRouteDeps, type SelectedArtifact } from '../routes/artifact-route.js'
import { privateMalwareRefusal, pyFileVersion } from '../routes/private-refusal.js'
import { visiblyNotArtifact } from '../routes/public-leg.js'
import { mountPy, type FileHandler } from '../routes/py-mount.js'
import { mountClients } from './mount-clients.js'
import { answerGeneration, mountCache, type MountAttachment, type MountWiringOptions } from './mount-wiring.js'

/** A digest set as SRI (the strongest SHA-2 it has) and a sha1 shasum, the shapes the integrity floor reads. */
export function integrityOf(hashes: Hashes): { integrity: string | undefined, shasum: string | undefined } {
  for (const algorithm of ['sha512', 'sha384', 'sha256'] as const) {
    const hex = hashes[algorithm]
    if (hex !== undefined && /^[0-9a-f]+$/.test(hex) && hex.length % 2 === 0) {
      return { integrity: `${algorithm}-${Buffer.from(hex, 'hex').toString('base64')}`, shasum: hashes['sha1'] }
    }
  }
  return { integrity: undefined, shasum: hashes['sha1'] }
}

/**
 * The py fields of a file's mirror job: every SHA-2 digest the page gave as
 * one SRI string (the worker verifies and uploads the sha256), the sha1 and
 * md5 when given, and whether the page offers the PEP 658 `.metadata`.
 */
export function pyMirrorFields(file: PageFile): NonNullable<SelectedArtifact['mirrorFields']> {
  const tokens: string[] = []
  for (const algorithm of ['sha256', 'sha384', 'sha512'] as const) {
    const hex = file.hashes[algorithm]
    if (hex !== undefined && /^[0-9a-f]+$/.test(hex) && hex.length % 2 === 0) tokens.push(`${algorithm}-${Buffer.from(hex, 'hex').toString('base64')}`)
  }
  const md5 = file.hashes['md5']
  return {
    mount: 'py',
    integrity: tokens.length === 0 ? undefined : tokens.join(' '),
    shasum: file.hashes['sha1'],
    md5: md5 !== undefined && /^[0-9a-f]{32}$/.test(md5) ? md5 : undefined,
    coreMetadata: file.coreMetadata,
  }
}

/** The upstream URL a file URL of `kind` names for `file`; undefined when the page offers no such thing. */
function upstreamOf(file: PageFile, kind: FileRequestKind): string | undefined {
  if (kind === 'file') return file.url
  if (kind === 'metadata') return file.coreMetadata ? metadataUrl(file.url) : undefined
  return file.provenance
}

/**
 * The `.metadata` relay (PEP 658): bounded by `limits.maxCoreMetadataBytes` on both legs, and an answer typed as
 * anything but core metadata (text/plain or an octet stream) refused 503 rather than passed to pip.
 */
function metadataRelay(maxBytes: number): Pick<ArtifactRouteDeps, 'relayBound' | 'anomalousType' | 'anomalousRefusal'> {
  return {
    relayBound: {
      maxBytes,
      tooLarge: new ServiceError('RESPONSE_TOO_LARGE', { message: `the upstream's core metadata file exceeds ${maxBytes} bytes (limits.maxCoreMetadataBytes)` }),
    },
    anomalousType: (contentType) => mediaType(contentType) !== 'text/plain' && visiblyNotArtifact(contentType),
    anomalousRefusal: (contentType, upstream) => new ServiceError('UPSTREAM_UNAVAILABLE', {
      message: `the upstream answered with ${mediaType(contentType)}, not core metadata`,
      data: { upstream, reason: 'not core metadata', contentType },
    }),
  }
}

function mediaType(contentType: string | undefined): string {
  return (contentType?.split(';')[0] ?? '').trim().toLowerCase()
}

export function attachPyMount(o: MountWiringOptions): MountAttachment<PageFile> {
  const { mount, config, policy, gate, logger, clock } = o
  const metadataRelayDeps = metadataRelay(config.limits.maxCoreMetadataBytes)
  const { privateClient, publicClient } = mountClients(mount, o.upstreams)
  const cache = mountCache<PageFile>(o, {
    selectedVersionSize: (f) => 256 + f.filename.length * 2 + f.url.length * 2 + (f.provenance?.length ?? 0) * 2,
  })
  const record = new ProjectPageRecord(logger)
  const limits = { ...DEFAULT_READ_LIMITS, maxBytes: o.upstreams.maxResponseBytes }
  const service = new ProjectService<PyPageOutcome>({
    privateClient,
    publicClient,
    cache,
    clock,
    generation: answerGeneration(o, policy),
    observe: (outcome, project) => {
      policy.observe(outcome, project)
      record.record(project, outcome.counts, outcome.mismatches)
    },
    render: (job) => runPyPageTask(o.pool, {
      project: job.project,
      baseUrl: job.baseUrl ?? config.server.baseUrl,
      format: job.format,
      now: job.now,
      privatePage: job.privatePage,
      publicPage: job.publicPage,
      privateHidesPublic: mount.privateHidesPublic,
      limits,
      gate: { module: o.gateModule, options: policy.gateOptions() },
      charge: (bytes) => job.charge(bytes),
      signal: job.signal,
    }),
  })

  // A file decision takes the gate's entry step, as a public artifact does on /js (SPEC.md 8.1).
  const select = async (project: string, filename: string, signal: AbortSignal): Promise<PageFile | undefined> => {
    const admission = await gate.enter(signal)
    try {
      return await service.selectFile(project, filename, admission, signal)
    } finally {
      admission.release()
    }
  }
  const artifactCounters = new ArtifactCounters()
  const handlerFor = (kind: FileRequestKind): FileHandler => {
    const handler = createArtifactHandler({
      ecosystem: 'py',
      privateClient,
      publicClient,
      // Each file's location is its page's: private files go to the private leg, public ones through the gate.
      privateUrl: async (_client, project, filename, signal) => {
        const file = await select(project, filename, signal)
        const url = file?.origin === 'private' ? upstreamOf(file, kind) : undefined
        return url === undefined ? undefined : new URL(url)
      },
      selectVersion: async (project, filename, signal): Promise<SelectedArtifact | undefined> => {
        const file = await select(project, filename, signal)
        const url = file?.origin === 'public' ? upstreamOf(file, kind) : undefined
        if (file === undefined || url === undefined) return undefined
        return {
          version: file.version, filename: file.filename, tarball: url, ...integrityOf(file.hashes), publishedAt: file.uploadMs === undefined ? undefined : new Date(file.uploadMs),
          ...(kind === 'file' ? { mirrorFields: pyMirrorFields(file) } : {}),
        }
      },
      validate: (project, filename) => [project, filename],
      // A distribution of a visibly other type is relayed, warned and never mirrored; core metadata is text, so an
      // HTML, XML or JSON answer is an error page and refused; provenance is JSON by nature, never judged by type.
      ...(kind === 'file' ? {} : kind === 'metadata' ? metadataRelayDeps : { anomalousType: () => false }),
      evaluate: (facts) => policy.evaluator.evaluate(facts, 'admission'),
      observe: policy.observeDecision,
      rules: policy.rules,
      integrityFloor: mount.integrityFloor,
      // Serve-then-enqueue for distribution files only; their `.metadata` and provenance are fetched by the worker itself.
      enqueue: kind === 'file' ? o.enqueue : undefined,
      logger,
      counters: artifactCounters,
      clock,
      forwardClientCredential: config.server.edgeTokens.length === 0,
      // A private file whose version a malware record names is refused (docs/security.md "Malware records"); the page drops it.
      privateRefusal: privateMalwareRefusal(policy, 'py', pyFileVersion, clock),
    })
    return (exchange, project, filename) => handler(exchange, project, filename)
  }
  mountPy(o.door, {
    hopMarker: o.upstreams.marker,
    ...(o.edge === undefined ? {} : { edge: o.edge }),
    // No publish on /py: a refused write is read up to the publish bound's default.
    refusedBodyBytes: DEFAULT_PUBLISH_MAX_BODY_BYTES,
    service,
    gate,
    logger,
    origin: o.origin,
    files: { file: handlerFor('file'), metadata: handlerFor('metadata'), provenance: handlerFor('provenance') },
  })
  return {
    clients: [privateClient, publicClient].filter((c): c is UpstreamClient => c !== undefined),
    publicClient,
    cache,
    snapshots: {
      [SNAPSHOT_KEYS.pypiFiles]: () => record.snapshot(),
      [SNAPSHOT_KEYS.pypiArtifact]: () => artifactCounters.snapshot(),
    },
  }
}


