import t from 'tap'
import { isServiceError } from '../../engine/errors.js'
import { checkPublishDocument } from '../../engine/publish/publish-document.js'
import { bytesOf, publishDocument } from './publish-documents.js'

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn()
    return undefined
  } catch (error) {
    return isServiceError(error) ? error.code : `not a ServiceError: ${String(error)}`
  }
}

t.test('a document as npm writes it passes, scoped and unscoped', async (t) => {
  t.same(checkPublishDocument(bytesOf(publishDocument({ name: '@acme/lib', version: '2.1.0' })), '@acme/lib'), { versions: ['2.1.0'] })
  t.same(checkPublishDocument(bytesOf(publishDocument({ name: 'acme-tool' })), 'acme-tool'), { versions: ['1.0.0'] })
})

t.test('malformed JSON or shape: 400', async (t) => {
  t.equal(codeOf(() => checkPublishDocument(Buffer.from('{"name":'), '@acme/lib')), 'PUBLISH_DOCUMENT_INVALID')
  t.equal(codeOf(() => checkPublishDocument(Buffer.from('[1]'), '@acme/lib')), 'PUBLISH_DOCUMENT_INVALID')
  const noVersions = publishDocument({ name: '@acme/lib' })
  noVersions['versions'] = {}
  t.equal(codeOf(() => checkPublishDocument(bytesOf(noVersions), '@acme/lib')), 'PUBLISH_DOCUMENT_INVALID')
  const noDist = publishDocument({ name: '@acme/lib' })
  delete noDist['versions']['1.0.0'].dist
  t.equal(codeOf(() => checkPublishDocument(bytesOf(noDist), '@acme/lib')), 'PUBLISH_DOCUMENT_INVALID')
})

t.test('an attachment whose length or digests disagree with its dist: 400', async (t) => {
  const length = publishDocument({ name: '@acme/lib' })
  length['_attachments']['@acme/lib-1.0.0.tgz'].length += 1
  t.equal(codeOf(() => checkPublishDocument(bytesOf(length), '@acme/lib')), 'PUBLISH_DOCUMENT_INVALID', 'length')

  const integrity = publishDocument({ name: '@acme/lib' })
  integrity['versions']['1.0.0'].dist.integrity = publishDocument({ name: '@acme/lib', tarball: Buffer.from('other bytes') })['versions']['1.0.0'].dist.integrity
  t.equal(codeOf(() => checkPublishDocument(bytesOf(integrity), '@acme/lib')), 'PUBLISH_DOCUMENT_INVALID', 'sha512 integrity')

  const shasum = publishDocument({ name: '@acme/lib' })
  shasum['versions']['1.0.0'].dist.shasum = '0'.repeat(40)
  t.equal(codeOf(() => checkPublishDocument(bytesOf(shasum), '@acme/lib')), 'PUBLISH_DOCUMENT_INVALID', 'shasum')

  const swapped = publishDocument({ name: '@acme/lib' })
  swapped['_attachments']['@acme/lib-1.0.0.tgz'].data = Buffer.from('tarball of @acme/lib@1.0.1').toString('base64')
  swapped['_attachments']['@acme/lib-1.0.0.tgz'].length = Buffer.byteLength('tarball of @acme/lib@1.0.1')
  t.equal(codeOf(() => checkPublishDocument(bytesOf(swapped), '@acme/lib')), 'PUBLISH_DOCUMENT_INVALID', 'other bytes, right length')

  const undigested = publishDocument({ name: '@acme/lib' })
  delete undigested['versions']['1.0.0'].dist.integrity
  delete undigested['versions']['1.0.0'].dist.shasum
  t.equal(codeOf(() => checkPublishDocument(bytesOf(undigested), '@acme/lib')), 'PUBLISH_DOCUMENT_INVALID', 'no digest at all')

  const notBase64 = publishDocument({ name: '@acme/lib' })
  notBase64['_attachments']['@acme/lib-1.0.0.tgz'].data = '!!!!'
  t.equal(codeOf(() => checkPublishDocument(bytesOf(notBase64), '@acme/lib')), 'PUBLISH_DOCUMENT_INVALID', 'not base64')
})

t.test('a tarball for no version, or a version without its tarball: 400', async (t) => {
  const stray = publishDocument({ name: '@acme/lib' })
  stray['_attachments']['@acme/lib-9.9.9.tgz'] = stray['_attachments']['@acme/lib-1.0.0.tgz']
  t.equal(codeOf(() => checkPublishDocument(bytesOf(stray), '@acme/lib')), 'PUBLISH_DOCUMENT_INVALID')
  const rewrite = publishDocument({ name: '@acme/lib' })
  rewrite['versions']['0.9.0'] = { name: '@acme/lib', version: '0.9.0', dist: { shasum: '0'.repeat(40) }, deprecated: 'smuggled' }
  t.equal(codeOf(() => checkPublishDocument(bytesOf(rewrite), '@acme/lib')), 'PUBLISH_DOCUMENT_INVALID', 'a metadata rewrite of another version')
})

t.test('a document naming another package than the route: 403', async (t) => {
  const other = bytesOf(publishDocument({ name: '@evil/lib' }))
  t.equal(codeOf(() => checkPublishDocument(other, '@acme/lib')), 'PUBLISH_NAME_MISMATCH', 'name')
  const id = publishDocument({ name: '@acme/lib' })
  id['_id'] = 'left-pad'
  t.equal(codeOf(() => checkPublishDocument(bytesOf(id), '@acme/lib')), 'PUBLISH_NAME_MISMATCH', '_id')
  const manifest = publishDocument({ name: '@acme/lib' })
  manifest['versions']['1.0.0'].name = 'left-pad'
  t.equal(codeOf(() => checkPublishDocument(bytesOf(manifest), '@acme/lib')), 'PUBLISH_NAME_MISMATCH', 'version manifest name')
  const manifestId = publishDocument({ name: '@acme/lib' })
  manifestId['versions']['1.0.0']._id = 'left-pad@1.0.0'
  t.equal(codeOf(() => checkPublishDocument(bytesOf(manifestId), '@acme/lib')), 'PUBLISH_NAME_MISMATCH', 'version manifest _id')
})

t.test('no _attachments is a metadata change (deprecate, one-version unpublish): 501', async (t) => {
  const deprecate = publishDocument({ name: '@acme/lib' })
  delete deprecate['_attachments']
  deprecate['versions']['1.0.0'].deprecated = 'use something else'
  t.equal(codeOf(() => checkPublishDocument(bytesOf(deprecate), '@acme/lib')), 'PUBLISH_METADATA_CHANGE')
  const empty = publishDocument({ name: '@acme/lib' })
  empty['_attachments'] = {}
  t.equal(codeOf(() => checkPublishDocument(bytesOf(empty), '@acme/lib')), 'PUBLISH_METADATA_CHANGE')
})

t.test('a key repeated in any object of the document: 400 (a first-wins target would read another name, manifest or tarball)', async (t) => {
  const text = (): string => Buffer.from(bytesOf(publishDocument({ name: '@acme/lib' }))).toString('utf8')
  const evil = publishDocument({ name: '@evil/lib', tarball: Buffer.from('evil bytes') })
  const evilManifest = JSON.stringify(evil['versions']['1.0.0'])
  // Each is read last-wins by JSON.parse (so the check sees @acme/lib as it should be) and first-wins by some targets.
  const cases: Record<string, string> = {
    'root name': text().replace('{', '{"name":"@evil/lib",'),
    'root _id': text().replace('{', '{"_id":"@evil/lib",'),
    'root name, escaped': text().replace('{', '{"n\\u0061me":"@evil/lib",'),
    'root versions': text().replace('{', `{"versions":${JSON.stringify(evil['versions'])},`),
    'root _attachments': text().replace('{', `{"_attachments":${JSON.stringify(evil['_attachments'])},`),
    'a version key': text().replace('"versions":{', `"versions":{"1.0.0":${evilManifest},`),
    'a manifest dist': text().replace('"_id":"@acme/lib@1.0.0",', `"_id":"@acme/lib@1.0.0","dist":${JSON.stringify(evil['versions']['1.0.0'].dist)},`),
    'a manifest name': text().replace('"_id":"@acme/lib@1.0.0",', '"_id":"@acme/lib@1.0.0","name":"@evil/lib",'),
    'a dist tarball': text().replace('"tarball":', '"tarball":"http://127.0.0.1/elsewhere.tgz","tarball":'),
    'an attachment': text().replace('"_attachments":{', `"_attachments":{"@acme/lib-1.0.0.tgz":${JSON.stringify(evil['_attachments']['@evil/lib-1.0.0.tgz'])},`),
  }
  for (const [what, document] of Object.entries(cases)) {
    t.not(document, text(), `${what}: the fixture was changed`)
    t.equal(codeOf(() => checkPublishDocument(Buffer.from(document), '@acme/lib')), 'PUBLISH_DOCUMENT_INVALID', what)
  }
  // The same key in two different objects is no repeat.
  t.same(checkPublishDocument(bytesOf(publishDocument({ name: '@acme/lib' })), '@acme/lib'), { versions: ['1.0.0'] })
})

t.test('a versions key that is not a canonical semver version: 400, however consistent the document', async (t) => {
  for (const key of ['__proto__', 'latest', 'constructor', 'v1.0.0', '=1.0.0', '1.0', '01.0.0', '1.0.0+build.1', ' 1.0.0', '']) {
    const doc = publishDocument({ name: '@acme/lib', version: key })
    // JSON.parse makes `__proto__` an own key; the fixture's literal object would not.
    const text = key === '__proto__' ? Buffer.from(JSON.stringify(publishDocument({ name: '@acme/lib', version: 'PROTO' })).replaceAll('PROTO', '__proto__')) : bytesOf(doc)
    t.equal(codeOf(() => checkPublishDocument(text, '@acme/lib')), 'PUBLISH_DOCUMENT_INVALID', JSON.stringify(key))
  }
  for (const version of ['1.0.0', '0.0.0-rc.1', '10.20.30-alpha.beta-1.0']) {
    t.same(checkPublishDocument(bytesOf(publishDocument({ name: '@acme/lib', version })), '@acme/lib'), { versions: [version] }, version)
  }
})
