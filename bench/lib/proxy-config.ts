/**
 * The configuration document of a bench's single `service proxy`: loopback,
 * one core (the other runs the load and the peers), warn logs, and its own
 * queue and store folders under the run's temporary folder. Scenarios add
 * their mounts and any other sections.
 */
import { join } from 'node:path'
import YAML from 'yaml'

export function benchProxyConfig(port: number, dir: string, sections: Record<string, unknown>): string {
  return YAML.stringify({
    server: { host: '127.0.0.1', port, baseUrl: `http://127.0.0.1:${port}` },
    runtime: { cores: 1 },
    observability: { logLevel: 'warn' },
    queue: { path: join(dir, 'queue') },
    store: { path: join(dir, 'store') },
    ...sections,
  })
}
