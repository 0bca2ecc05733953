/**
 * The container image and the Kubernetes manifests in deploy/ agree with the
 * configuration reference (issue 18): the ConfigMap and Secret make a
 * configuration the loader accepts; every Deployment runs a known role on
 * the configured port with /livez and /readyz probes, limits the sizing
 * reads, and a grace period above the drain bound; the PodDisruptionBudget
 * and the Service select the proxy; the Dockerfile runs the launcher as a
 * non-root user on a base whose glibc loads the Node 24 uWS build, and stops
 * it with SIGTERM. Rolling updates refuse nothing (issue 30 item 5): the
 * proxy and the mirror roll with `maxUnavailable: 0`, the proxy's lame-duck
 * period sits inside the drain bound, and the singletons recreate. The
 * ConfigMap gives Pilot an OSV source, so the shipped Pilot boots.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import YAML from 'yaml'
import { readBuildInfo } from '../../engine/build-info.js'
import { loadConfig } from '../../engine/config/load.js'
import { parseArgs } from '../../server/cli/args.js'
import { checkPilotConfig } from '../../server/roles/pilot.js'

// Manifests are walked as loosely typed trees; the assertions are the schema.
type Doc = Record<string, any>

const root = readBuildInfo().root
const folder = join(root, 'deploy')
const docs: Doc[] = readdirSync(folder).filter((f) => f.endsWith('.yaml')).sort()
  .flatMap((f) => YAML.parseAllDocuments(readFileSync(join(folder, f), 'utf8')).map((d) => d.toJS() as Doc))
const ofKind = (kind: string): Doc[] => docs.filter((d) => d['kind'] === kind)

const configMap = ofKind('ConfigMap')[0]!
const secret = ofKind('Secret')[0]!
const dir = await mkdtemp(join(tmpdir(), 'deploy-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))
const configPath = join(dir, 'config.yaml')
writeFileSync(configPath, String(configMap['data']['config.yaml']))
const env: Record<string, string> = { ...secret['stringData'] }
const loaded = loadConfig({ configPath, env })

t.test('the ConfigMap and Secret make a configuration the loader accepts', async (t) => {
  t.ok(loaded.ok, loaded.ok ? 'accepted' : JSON.stringify(loaded.problems))
})

const config = loaded.ok ? loaded.config : undefined
const deployments = ofKind('Deployment')

t.test('every role has a Deployment', async (t) => {
  const roles = deployments.map((d) => d['spec']['template']['spec']['containers'][0]['args'][0] as string).sort()
  t.same(roles, ['dredger', 'mirror', 'pilot', 'proxy'])
})

for (const deployment of deployments) {
  const name = deployment['metadata']['name'] as string
  t.test(`${name}: role, port, probes, limits and grace agree with the configuration`, async (t) => {
    const pod = deployment['spec']['template']['spec']
    const container = pod['containers'][0]
    t.match(parseArgs(container['args']), { kind: 'role', role: container['args'][0] }, 'a role the CLI knows')
    const http = (container['ports'] as Doc[]).find((p) => p['name'] === 'http')
    t.equal(http?.['containerPort'], config?.server.port, 'the container port is server.port')
    t.match(container['livenessProbe'], { httpGet: { path: '/livez', port: 'http' } })
    t.match(container['readinessProbe'], { httpGet: { path: '/readyz', port: 'http' } })
    t.ok(pod['terminationGracePeriodSeconds'] > (config?.server.shutdownDrainTimeout ?? Infinity), 'the grace period outlasts the drain')
    t.ok(container['resources']['limits']['memory'], 'a memory limit for the sizing')
    t.ok(container['resources']['limits']['cpu'], 'a CPU limit for the sizing')
    t.equal(container['env'].find((e: Doc) => e['name'] === 'SERVICE_CONFIG')?.['value'], '/etc/registry-proxy/config.yaml')
    t.equal(pod['volumes'].find((v: Doc) => v['name'] === 'config')?.['configMap']['name'], configMap['metadata']['name'])
    t.equal(container['envFrom'][0]['secretRef']['name'], secret['metadata']['name'])
    t.equal(pod['securityContext']['runAsNonRoot'], true)
    t.same(deployment['spec']['selector']['matchLabels'], deployment['spec']['template']['metadata']['labels'])
  })
}

const roleOf = (deployment: Doc): string => deployment['spec']['template']['spec']['containers'][0]['args'][0] as string

t.test('rolling updates: the proxy and the mirror never drop below their replicas; the singletons recreate', async (t) => {
  for (const deployment of deployments) {
    const role = roleOf(deployment)
    const strategy = deployment['spec']['strategy'] as Doc | undefined
    if (role === 'proxy' || role === 'mirror') {
      t.equal(strategy?.['type'], 'RollingUpdate', `${role}: rolling`)
      t.equal(strategy?.['rollingUpdate']?.['maxUnavailable'], 0, `${role}: a new pod is ready before an old one stops`)
      t.ok(strategy?.['rollingUpdate']?.['maxSurge'] >= 1, `${role}: room for the new pod`)
    } else {
      t.equal(strategy?.['type'], 'Recreate', `${role}: one at a time`)
    }
  }
})

t.test('the proxy: lame-duck period inside the drain bound, the grace period above both, no preStop', async (t) => {
  const proxy = deployments.find((d) => roleOf(d) === 'proxy')!
  const pod = proxy['spec']['template']['spec']
  const server = config?.server
  t.ok(server !== undefined && server.drainDelaySeconds >= 2, `a lame-duck period a balancer can act in (${server?.drainDelaySeconds} s)`)
  t.ok(server !== undefined && server.drainDelaySeconds < server.shutdownDrainTimeout, 'the delay counts against the drain bound and leaves time to drain')
  t.ok(pod['terminationGracePeriodSeconds'] > (server?.shutdownDrainTimeout ?? Infinity), 'the grace period is above delay and drain together')
  t.equal(pod['containers'][0]['lifecycle']?.['preStop'], undefined, 'the in-process lame-duck period does what a preStop sleep would, and more')
})

t.test('the ConfigMap gives Pilot an OSV source: the shipped Pilot boots', async (t) => {
  t.doesNotThrow(() => checkPilotConfig(config!), 'advisories.osvExportBaseUrl is set')
  t.match(config?.advisories.osvExportBaseUrl, /\.example\.internal\//, 'an example value to replace, like the others')
})

t.test('the PodDisruptionBudget and the Service select the proxy pods', async (t) => {
  const proxy = deployments.find((d) => d['spec']['template']['spec']['containers'][0]['args'][0] === 'proxy')!
  const labels = proxy['spec']['template']['metadata']['labels'] as Record<string, string>
  const pdb = ofKind('PodDisruptionBudget')[0]!
  t.same(pdb['spec']['selector']['matchLabels'], labels)
  t.ok(pdb['spec']['minAvailable'] >= 1 && pdb['spec']['minAvailable'] < proxy['spec']['replicas'], 'one pod may go, one always stays')
  const service = ofKind('Service')[0]!
  t.same(service['spec']['selector'], labels)
  t.equal(service['spec']['ports'][0]['targetPort'], 'http')
})

t.test('the Dockerfile', async (t) => {
  const text = readFileSync(join(root, 'Dockerfile'), 'utf8')
  t.match(text, /^ARG NODE_IMAGE=node:24-trixie-slim$/m, 'Debian 13: glibc 2.41 loads the Node 24 uWS build')
  t.match(text, /^STOPSIGNAL SIGTERM$/m)
  t.match(text, /^USER node$/m, 'not root')
  t.match(text, new RegExp(`^EXPOSE ${config?.server.port}$`, 'm'))
  t.match(text, /^ENTRYPOINT \["node", "dist\/server\/cli\/service\.js"\]$/m, 'the launcher, which sizes the heap and forwards SIGTERM')
  t.match(text, /npm prune --omit=dev/, 'no dev dependencies in the image')
})
