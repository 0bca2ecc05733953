/**
 * The kept upstream documents of a proxy (engine/cache/document-keep.ts,
 * docs/cache.md "Kept upstream documents"): on the local backend a folder
 * on disk (`cache.warmPath`, `cache.warmMaxBytes`), so a restarted
 * single-node proxy revalidates what it read before instead of reading it
 * again in full; none when `cache.warmMaxBytes` is 0.
 */
import { DiskDocumentKeep } from '../../engine/cache/disk-document-keep.js'
import type { DocumentKeep } from '../../engine/cache/document-keep.js'
import type { Config } from '../../engine/config/config.js'
import type { Logger } from '../../engine/log/logger.js'
import type { SharedCache } from './shared-cache.js'

export async function openDocumentKeep(config: Config, logger: Logger, sharedCache: SharedCache | undefined): Promise<DocumentKeep | undefined> {
  if (sharedCache !== undefined || config.cache.warmMaxBytes === 0) return undefined
  return DiskDocumentKeep.open({ dir: config.cache.warmPath, maxBytes: config.cache.warmMaxBytes, logger })
}
