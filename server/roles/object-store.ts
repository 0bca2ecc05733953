/**
 * The object store a role's configuration names (DESIGN.md "Embedded by
 * default, cloud when you outgrow one machine"): `store.kind: embedded` is a
 * FilesystemObjectStore in `store.path`; `store.kind: s3` is an
 * S3ObjectStore on `store.bucket` under `store.prefix`, at `store.endpoint`
 * when set, with credentials from the AWS SDK's default provider chain
 * (environment, profile, container or instance role): never from the
 * configuration document (SPEC.md 5.8); through the forward proxy when
 * one is given (engine/upstream/proxied-agents.ts).
 */
import type { Clock } from '../../engine/clock.js'
import type { Config } from '../../engine/config/config.js'
import { ServiceError } from '../../engine/errors.js'
import { FilesystemObjectStore } from '../../engine/store/filesystem-object-store.js'
import type { ObjectStore } from '../../engine/store/object-store.js'
import type { ForwardProxy } from '../../engine/upstream/forward-proxy.js'
import { proxiedAgents } from '../../engine/upstream/proxied-agents.js'

type StoreConfig = Config['store']

/** How logs name the store: `embedded:<path>` or `s3://<bucket>/<prefix>` (never a credential). */
export function describeObjectStore(store: StoreConfig): string {
  return store.kind === 'embedded' ? `embedded:${store.path}` : `s3://${store.bucket ?? '<unset>'}/${store.prefix}`
}

/**
 * Opens the configured store. Throws BOOT_UNBUILDABLE when it cannot be
 * built in the live environment (SPEC.md 7.2: exit 2): an unusable folder,
 * or an S3 store with no bucket or no region anywhere.
 */
export async function openObjectStore(store: StoreConfig, clock: Clock, env: NodeJS.ProcessEnv = process.env, forwardProxy?: ForwardProxy): Promise<ObjectStore> {
  if (store.kind === 'embedded') {
    try {
      return await FilesystemObjectStore.open({ root: store.path, clock })
    } catch (error) {
      throw new ServiceError('BOOT_UNBUILDABLE', { message: `store.path ${store.path}: the embedded object store cannot be opened`, cause: error })
    }
  }
  if (store.bucket === undefined) {
    throw new ServiceError('BOOT_UNBUILDABLE', { message: 'store.bucket is required when store.kind is s3' })
  }
  const region = store.region ?? env['AWS_REGION'] ?? env['AWS_DEFAULT_REGION']
  if (region === undefined || region === '') {
    throw new ServiceError('BOOT_UNBUILDABLE', { message: 'store.region (or AWS_REGION) is required when store.kind is s3' })
  }
  // Loaded here, not at import: the embedded store (the default) never pays for the S3 SDK.
  const { createS3Client, S3ObjectStore } = await import('../../engine/store/s3-object-store.js')
  const client = createS3Client({ region, ...(store.endpoint === undefined ? {} : { endpoint: store.endpoint }), agents: forwardProxy === undefined ? undefined : proxiedAgents(forwardProxy) })
  try {
    return new S3ObjectStore({ client, bucket: store.bucket, prefix: store.prefix })
  } catch (error) {
    throw new ServiceError('BOOT_UNBUILDABLE', { message: `store.prefix ${JSON.stringify(store.prefix)} is not a usable key prefix`, cause: error })
  }
}
