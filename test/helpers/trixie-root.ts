/**
 * A Debian 13 (trixie) root folder for the runtime tests (issue 18): the
 * uWebSockets.js build for Node 22 and 24 needs glibc 2.38 or newer, and the
 * machines run Debian 12 (glibc 2.36). The container image's base is Debian
 * 13, so a trixie root is where the service on Node 22 and 24 can be run as
 * the image runs it, without a container engine.
 *
 * Made once per machine with `debootstrap --variant=minbase` (test/setup
 * installs it) into /var/cache/registry-proxy-tests. Several tap processes
 * may ask at once: the root is made under `flock` in a staging folder and
 * renamed into place, so the root's folder exists only once it is complete.
 *
 * Entering it needs root (chroot, mount). Each run gets its own private mount
 * namespace (`unshare --mount`), so its mounts (/proc, /dev, /sys, the
 * project, /app) vanish with its last process, even after a SIGKILL: there
 * is nothing to unmount at teardown, and concurrent runs do not see each
 * other's mounts.
 */
import { execFile } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { readBuildInfo } from '../../engine/build-info.js'

const run = promisify(execFile)

/** The image's user (the node images' `node`, uid and gid 1000). */
export const IMAGE_USER = { name: 'node', uid: 1000, gid: 1000 } as const

/** The node images' PATH; also where debootstrap, chroot and mount are found when the caller's PATH lacks sbin. */
const IMAGE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

// Outside the project, so that `npm ci` (which empties node_modules) keeps it and every checkout
// on the machine shares it; only root makes or enters it. Renamed when what is in it changes.
const CACHE = '/var/cache/registry-proxy-tests'
const ROOT = join(CACHE, 'debian-trixie-1')

/** The root's path and its glibc version, or why there is none here. */
export async function trixieRoot(): Promise<{ path: string; glibc: string } | { unavailable: string }> {
  if (process.platform !== 'linux' || process.arch !== 'x64') return { unavailable: `a Debian root for linux-x64; this is ${process.platform}-${process.arch}` }
  if (process.getuid?.() !== 0) return { unavailable: 'making and entering a Debian 13 root needs root (debootstrap, chroot, mount)' }
  if (!existsSync(ROOT)) {
    if (!(await onPath('debootstrap'))) return { unavailable: 'debootstrap is not installed (test/setup installs it)' }
    await mkdir(CACHE, { recursive: true })
    try {
      // About 1.5 minutes on 2 cores; the bound stays under tap's per-file timeout, so a slow
      // mirror skips rather than fails. A debootstrap cut off here finishes (or not) under the
      // lock it inherited, and the next run finds its root or cleans up its staging folder.
      await run('flock', [`${ROOT}.lock`, 'sh', '-euc', MAKE_ROOT, 'make-root', ROOT, ...aptMirror()], { env: { ...process.env, PATH: IMAGE_PATH }, timeout: 300_000, maxBuffer: 64 << 20 })
    } catch (error) {
      const e = error as Error & { stderr?: string; stdout?: string; killed?: boolean }
      // debootstrap prints its `E: ` line on stdout.
      const output = `${e.stdout ?? ''}\n${e.stderr ?? ''}`.split('\n').filter((l) => l.trim() !== '')
      const reason = e.killed === true ? 'timed out after 300 s' : output.find((l) => l.startsWith('E: ')) ?? output.at(-1) ?? e.message
      return { unavailable: `debootstrap could not make a Debian 13 root: ${reason}` }
    }
  }
  const glibc = /^Package: libc6\n(?:[^\n]+\n)*?Version: (\d+\.\d+)/m.exec(readFileSync(join(ROOT, 'var/lib/dpkg/status'), 'utf8'))?.[1]
  return glibc === undefined ? { unavailable: `${ROOT} has no libc6` } : { path: ROOT, glibc }
}

// Under the lock: a staging folder left by a killed run is removed (after
// unmounting what debootstrap mounted in it); the user is the image's.
const MAKE_ROOT = `
root=$1; shift
[ -d "$root" ] && exit 0
staging="$root.partial"
if [ -e "$staging" ]; then
  for m in proc sys dev/pts dev; do umount -l "$staging/$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$staging"
fi
debootstrap --variant=minbase trixie "$staging" "$@" || { rm -rf --one-file-system "$staging"; exit 1; }
chroot "$staging" groupadd --gid ${IMAGE_USER.gid} ${IMAGE_USER.name}
chroot "$staging" useradd --uid ${IMAGE_USER.uid} --gid ${IMAGE_USER.gid} --create-home --shell /bin/sh ${IMAGE_USER.name}
mkdir "$staging/app"
mv -T "$staging" "$root"
`

/**
 * An executable that runs the given Node binary with its arguments inside
 * the root as the image does: as the `node` user, in /app with /app/var
 * writable by it, NODE_ENV=production, the image's PATH and HOME, no
 * NODE_OPTIONS (the caller's environment is passed through otherwise). The project and the Node binary's
 * release folder are mounted read-only at their own paths, so paths into
 * them (dist/, the binary) hold inside. Pass it as runService's `node`.
 * The chain is exec all the way down, so the pid the caller holds is the
 * Node process, and its signals reach it.
 */
export async function nodeInRoot(t: { teardown(fn: () => unknown): void }, root: string, node: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'trixie-node-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const project = readBuildInfo().root
  const release = dirname(dirname(node))
  const binds = release.startsWith(`${project}/`) ? [project] : [project, release]
  const script = join(dir, 'node')
  await writeFile(script, `#!/bin/sh
set -eu
PATH=${IMAGE_PATH}
# tap's processinfo puts its --import into every child Node's NODE_OPTIONS; its exit hook writes
# into the project's .tap, read-only in here. The image sets no NODE_OPTIONS.
unset NODE_OPTIONS
if [ "\${1:-}" != --in-namespace ]; then exec unshare --mount --propagation private -- "$0" --in-namespace "$@"; fi
shift
r=${quote(root)}
mount -t proc proc "$r/proc"
mount --rbind /dev "$r/dev"
mount --rbind /sys "$r/sys"
for d in ${binds.map(quote).join(' ')}; do
  mkdir -p "$r$d"
  mount --bind "$d" "$r$d"
  mount -o remount,bind,ro "$r$d"
done
mount -t tmpfs -o mode=0755 app "$r/app"
mkdir "$r/app/var"
chown ${IMAGE_USER.uid}:${IMAGE_USER.gid} "$r/app/var"
exec chroot --userspec=${IMAGE_USER.name}:${IMAGE_USER.name} "$r" /usr/bin/env -C /app PATH="$PATH" HOME=/home/${IMAGE_USER.name} NODE_ENV=production ${quote(node)} "$@"
`)
  await chmod(script, 0o755)
  return script
}

/** The real user id of a running process, from /proc. */
export function processUid(pid: number): number | undefined {
  const uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
  return uid === undefined ? undefined : Number(uid)
}

/** The Debian mirror this machine's apt uses, so the root comes from the same place; none: debootstrap's default. */
function aptMirror(): string[] {
  const folder = '/etc/apt/sources.list.d'
  const files = ['/etc/apt/sources.list', ...(existsSync(folder) ? readdirSync(folder).filter((f) => /\.(list|sources)$/.test(f)).map((f) => join(folder, f)) : [])]
  for (const file of files) {
    const text = existsSync(file) ? readFileSync(file, 'utf8') : ''
    const uris = [...text.matchAll(/^\s*(?:URIs:|deb(?:\s+\[[^\]]*\])?)\s+(\S+)/gm)].map((m) => m[1]!)
    const main = uris.find((u) => /^https?:\/\//.test(u) && !/security|updates/.test(u))
    if (main !== undefined) return [main]
  }
  return []
}

async function onPath(command: string): Promise<boolean> {
  try {
    await run('sh', ['-c', `command -v ${command}`], { env: { PATH: IMAGE_PATH } })
    return true
  } catch {
    return false
  }
}

function quote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`
}
