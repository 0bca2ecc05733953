/**
 * The mirror job of artifact `n` that the enqueue tests offer (enqueue-buffer,
 * enqueue-outage, shared-enqueue-memory): a distinct package per `n`, every
 * job the same encoded size (the buffer charges by it), a fixed enqueue time.
 */
import type { MirrorJob } from '../../engine/mirror/mirror-job.js'

export function job(n: number, prefix = 'widget'): MirrorJob {
  const name = `${prefix}-${n}`
  return {
    url: `https://127.0.0.1:8443/${name}/-/${name}-1.0.0.tgz`,
    package: name,
    version: '1.0.0',
    filename: `${name}-1.0.0.tgz`,
    integrity: `sha512-${Buffer.alloc(64, n % 256).toString('base64')}`,
    shasum: 'a'.repeat(40),
    enqueuedAt: '2026-01-02T03:04:05.678Z',
  }
}
