/**
 * The per-version flags the history rules read (packument-index.ts
 * VERSION_TRUSTED_PUBLISHER, VERSION_PROVENANCE, the install-script bits),
 * as the scanner records them when told to, read as JSON.parse reads the
 * manifest (the last of a repeated key wins; truthiness as JavaScript's),
 * whatever the chunking.
 */
import t from 'tap'
import { scanPackument } from '../../engine/packument/scanner.js'
import { hasInstallScript, trustOf } from '../../engine/packument/version-history.js'
import { chunked, utf8 } from './helpers.js'

const MANIFESTS: Record<string, { manifest: Record<string, unknown> | string; trust: number; script: boolean }> = {
  none: { manifest: { dist: { tarball: 't' } }, trust: 0, script: false },
  prov: { manifest: { dist: { tarball: 't', attestations: { url: 'u', provenance: { predicateType: 'p' } } } }, trust: 1, script: false },
  provNull: { manifest: { dist: { attestations: { provenance: null } } }, trust: 0, script: false },
  tp: { manifest: { _npmUser: { name: 'ci', trustedPublisher: { id: 'github' } }, dist: {} }, trust: 2, script: false },
  tpFalse: { manifest: { _npmUser: { name: 'ci', trustedPublisher: false } }, trust: 0, script: false },
  tpString: { manifest: { _npmUser: { trustedPublisher: '' } }, trust: 0, script: false },
  scripts: { manifest: { scripts: { test: 'x', postinstall: 'y' } }, trust: 0, script: true },
  emptyScript: { manifest: { scripts: { install: '' } }, trust: 0, script: false },
  declared: { manifest: { hasInstallScript: true }, trust: 0, script: true },
  // Raw JSON: a repeated `dist` replaces the earlier one whole, a repeated `_npmUser` too.
  redist: { manifest: '{"dist":{"attestations":{"provenance":{}}},"dist":{"tarball":"t"}}', trust: 0, script: false },
  reuser: { manifest: '{"_npmUser":{"trustedPublisher":{}},"_npmUser":"someone"}', trust: 0, script: false },
  escaped: { manifest: '{"_npm\\u0055ser":{"trusted\\u0050ublisher":{"id":"x"}}}', trust: 2, script: false },
  lastScript: { manifest: '{"hasInstallScript":true,"hasInstallScript":false}', trust: 0, script: false },
}

function document(): Uint8Array {
  const versions = Object.entries(MANIFESTS).map(([key, { manifest }], k) =>
    `"1.0.${k}":${typeof manifest === 'string' ? manifest : JSON.stringify(manifest)}`).join(',')
  return utf8(`{"name":"p","versions":{${versions}}}`)
}

t.test('trust and install-script flags, in any chunking and either form', async (t) => {
  const bytes = document()
  for (const size of [1, 7, bytes.length]) {
    for (const recordMembers of [false, true]) {
      const index = scanPackument(chunked(bytes, size), { recordMembers, recordTrust: true, recordScripts: true })
      Object.entries(MANIFESTS).forEach(([key, expected], k) => {
        const entry = index.versions.get(`1.0.${k}`)!
        t.equal(trustOf(entry), expected.trust, `${key} trust (chunks of ${size}, members ${recordMembers})`)
        t.equal(hasInstallScript(entry), expected.script, `${key} script (chunks of ${size}, members ${recordMembers})`)
      })
    }
  }
})

t.test('not told to: no trust flags, and the full form reads no scripts', async (t) => {
  const index = scanPackument([document()], { recordMembers: false })
  for (const entry of index.versions.values()) {
    t.equal(trustOf(entry), 0)
    t.equal(hasInstallScript(entry), false)
  }
})
