/**
 * The C allocator's settings for the service process, passed by the launcher
 * in `GLIBC_TUNABLES` (issue 18: memory after a flood).
 *
 * glibc serves an allocation of 128 KiB or more with a mapping of its own,
 * unmapped when freed, but by default it raises that threshold to the size
 * of the largest mapped block freed so far (up to 32 MiB). After one 20 MB
 * listing has come and gone, every later block below 20 MB comes from the
 * thread's arena instead, and an arena gives memory back only from its top:
 * after a flood of 20 MB listings, hundreds of MiB stayed resident in arenas
 * while the process sat idle. Held at 128 KiB, the threshold stays where
 * glibc starts it, so large blocks (a listing's 256 KiB runs,
 * engine/upstream/chunk-runs.ts; a rendered response; a decoded page) leave
 * with their last reference. The cost is a fresh mapping, and its page
 * faults, for each such block.
 *
 * An operator's own `glibc.malloc.mmap_threshold` wins; other tunables they
 * set are kept. Other C libraries ignore the variable.
 */

export const MMAP_THRESHOLD_BYTES = 128 * 1024
const MMAP_THRESHOLD_TUNABLE = 'glibc.malloc.mmap_threshold'

/** The `GLIBC_TUNABLES` value to start the service with, given the launcher's own. */
export function mallocTunables(inherited: string | undefined): string {
  const own = inherited ?? ''
  if (own.split(':').some((entry) => entry.startsWith(`${MMAP_THRESHOLD_TUNABLE}=`))) return own
  const ours = `${MMAP_THRESHOLD_TUNABLE}=${MMAP_THRESHOLD_BYTES}`
  return own === '' ? ours : `${own}:${ours}`
}
