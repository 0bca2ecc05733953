/**
 * container.id from the process's cgroup files (SPEC.md 4.5), cgroup v1 and v2.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { containerDetector, containerIdFromCgroup, containerIdFromMountinfo } from '../../engine/telemetry/container-detector.js'

const ID = 'a'.repeat(12) + '0123456789abcdef'.repeat(3) + 'b'.repeat(4)

t.test('cgroup v1 paths', async (t) => {
  t.equal(containerIdFromCgroup(`12:memory:/docker/${ID}\n`), ID)
  t.equal(containerIdFromCgroup(`1:name=systemd:/kubepods/besteffort/pod1/${ID}\n`), ID)
  t.equal(containerIdFromCgroup(`0::/system.slice/cri-containerd-${ID}.scope\n`), ID)
  t.equal(containerIdFromCgroup('0::/\n'), undefined, 'cgroup v2 says nothing here')
  t.equal(containerIdFromCgroup('0::/user.slice/user-0.slice/session-1.scope\n'), undefined)
})

t.test('cgroup v2: the runtime bind mounts', async (t) => {
  t.equal(containerIdFromMountinfo(`612 600 254:1 /var/lib/docker/containers/${ID}/hostname /etc/hostname rw,relatime - ext4 /dev/vda1 rw\n`), ID)
  t.equal(containerIdFromMountinfo('22 1 254:1 / / rw,relatime - ext4 /dev/vda1 rw\n'), undefined)
})

t.test('the detector reads the files, and reports nothing outside a container', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'container-detector-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await writeFile(join(dir, 'cgroup'), '0::/\n')
  await writeFile(join(dir, 'mountinfo'), `1 2 3:4 /var/lib/docker/containers/${ID}/resolv.conf /etc/resolv.conf rw - ext4 x rw\n`)
  t.same(containerDetector(dir).detect(), { attributes: { 'container.id': ID } })
  t.same(containerDetector(join(dir, 'missing')).detect(), {})
})
