import t from 'tap'
import { schemaAt } from '../../engine/config/environment.js'
import { schemaKeyPaths } from '../../engine/config/schema-keys.js'
import { ConfigSchema } from '../../engine/config/schema.js'

t.test('every key the schema accepts, as dotted paths', async (t) => {
  const paths = schemaKeyPaths()
  for (const path of ['server.port', 'server.edgeTokens', 'mounts.js.upstreams.public.url', 'mounts.py.mirror.simpleUrl', 'mounts.js.rules', 'credentials[].provider', 'credentials[].durationSeconds', 'respectUpstreamTarballHost']) {
    t.ok(paths.includes(path), path)
  }
  t.notOk(paths.includes('server'), 'objects are listed through their keys')
  t.equal(new Set(paths).size, paths.length, 'each once')
  for (const path of paths.filter((p) => !p.includes('[]'))) t.ok(schemaAt(ConfigSchema, path.split('.')), `${path} is a key the environment can set`)
})
