import { open } from 'node:fs/promises'

/**
 * Flushes a folder's entries to disk: after a rename or a create, the new
 * name itself survives a crash only once its folder is synced (POSIX fsync
 * of the directory). Shared by the embedded queue and the embedded store.
 */
export async function syncFolder(path: string): Promise<void> {
  const handle = await open(path, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}
