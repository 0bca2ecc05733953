/**
 * `container.id` for the resource (SPEC.md 4.5: the exposition carries the
 * container identity), read from the process's own cgroup files, without
 * the network: cgroup v1 names the container in `/proc/self/cgroup`
 * (`.../docker/<id>`, `.../kubepods/.../<id>`, `cri-containerd-<id>.scope`);
 * under cgroup v2 that file reads `0::/`, and the runtime's bind mounts in
 * `/proc/self/mountinfo` name it (`/containers/<id>/hostname`). Outside a
 * container nothing is found and nothing is reported.
 */
import { readFileSync } from 'node:fs'
import type { ResourceDetector } from '@opentelemetry/resources'

const ID = /[0-9a-f]{64}/

export function containerIdFromCgroup(text: string): string | undefined {
  for (const line of text.split('\n')) {
    const path = line.slice(line.lastIndexOf(':') + 1)
    const last = path.split('/').pop() ?? ''
    const match = ID.exec(last)
    if (match !== null) return match[0]
  }
  return undefined
}

export function containerIdFromMountinfo(text: string): string | undefined {
  for (const line of text.split('\n')) {
    const match = /\/containers\/([0-9a-f]{64})\/(?:hostname|resolv\.conf|hosts)\b/.exec(line) ?? /\/sandboxes\/([0-9a-f]{64})\//.exec(line)
    if (match !== null) return match[1]
  }
  return undefined
}

function readOr(path: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return ''
  }
}

export function containerDetector(root = '/proc/self'): ResourceDetector {
  return {
    detect: () => {
      const id = containerIdFromCgroup(readOr(`${root}/cgroup`)) ?? containerIdFromMountinfo(readOr(`${root}/mountinfo`))
      return id === undefined ? {} : { attributes: { 'container.id': id } }
    },
  }
}
