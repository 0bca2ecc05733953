/** Finds a command on PATH or in the sbin folders Debian installs daemons into. */
import { access, constants } from 'node:fs/promises'
import { delimiter, join } from 'node:path'

export async function findExecutable(name: string): Promise<string | undefined> {
  const folders = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin', '/sbin']
  for (const folder of folders) {
    if (folder === '') continue
    const candidate = join(folder, name)
    try {
      await access(candidate, constants.X_OK)
      return candidate
    } catch {
      // not here; try the next folder
    }
  }
  return undefined
}
