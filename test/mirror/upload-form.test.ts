/**
 * The `py` upload body (engine/mirror/upload-form.ts) and its fields
 * (engine/mirror/upload-metadata.ts): the parts are what a multipart parser
 * reads back; the file streams through chunk by chunk, each chunk handed on
 * before the next is pulled; the closing delimiter is written only after
 * the verdict, never after a failed one; and the form carries the fields
 * twine sends, from the file name and the PEP 658 metadata.
 */
import t from 'tap'
import { distributionFacts, DEFAULT_METADATA_VERSION, parseMetadataHeaders, readMetadataHeader, uploadFields } from '../../engine/mirror/upload-metadata.js'
import { uploadBody, uploadFormParts } from '../../engine/mirror/upload-form.js'
import { parseMultipart } from '../peers/py-upload-index.js'

async function collect(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const out: Buffer[] = []
  for await (const chunk of body) out.push(Buffer.from(chunk))
  return Buffer.concat(out)
}

async function* chunks(...parts: string[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield Buffer.from(p)
}

t.test('the parts read back as a complete form; length() is the body\'s', async (t) => {
  const parts = uploadFormParts([['name', 'demo'], [':action', 'file_upload'], ['classifiers', 'A :: B'], ['classifiers', 'C'], ['summary', 'line one\r\nline "two"']], 'demo-1.0.tar.gz')
  t.match(parts.contentType, /^multipart\/form-data; boundary=----registry-proxy-[0-9a-f]{32}$/)
  const body = await collect(uploadBody(parts, chunks('abc', 'defg'), () => {}, () => {}))
  t.equal(body.byteLength, parts.length(7))
  const read = parseMultipart(body, parts.boundary)
  t.ok(read !== undefined, 'complete')
  t.same(read?.map((p) => [p.name, p.filename, p.body.toString()]), [
    ['name', undefined, 'demo'], [':action', undefined, 'file_upload'], ['classifiers', undefined, 'A :: B'], ['classifiers', undefined, 'C'],
    ['summary', undefined, 'line one\r\nline "two"'], ['content', 'demo-1.0.tar.gz', 'abcdefg'],
  ], 'repeated fields stay repeated; a value keeps its line breaks')
  t.throws(() => uploadFormParts([], 'x.whl', 'bad boundary with spaces'), TypeError)
  t.match(uploadFormParts([], 'a"b\r\n.whl').head.toString(), 'filename="a%22b%0D%0A.whl"', 'a quote or line break in the file name cannot end the parameter')
})

t.test('streaming: each chunk is handed on before the next is pulled; the tail only after the verdict', async (t) => {
  const parts = uploadFormParts([['name', 'demo']], 'demo-1.0-py3-none-any.whl')
  const pulled: string[] = []
  async function* source(): AsyncGenerator<Uint8Array> {
    for (const c of ['one', 'two', 'three']) {
      pulled.push(c)
      yield Buffer.from(c)
    }
  }
  const seen: string[] = []
  let verified = false
  const body = uploadBody(parts, source(), (c) => seen.push(Buffer.from(c).toString()), () => { verified = true })
  const first = await body.next()
  t.same(Buffer.from(first.value as Uint8Array), parts.head, 'the head first')
  t.same(pulled, [], 'nothing pulled from the file yet')
  t.equal(Buffer.from((await body.next()).value as Uint8Array).toString(), 'one')
  t.same(pulled, ['one'], 'one chunk pulled, one handed on: nothing buffered')
  t.equal(Buffer.from((await body.next()).value as Uint8Array).toString(), 'two')
  t.equal(Buffer.from((await body.next()).value as Uint8Array).toString(), 'three')
  t.notOk(verified, 'not verified while the file still streams')
  const tail = await body.next()
  t.ok(verified, 'verified after the last chunk')
  t.same(Buffer.from(tail.value as Uint8Array), parts.tail, 'then the closing delimiter')
  t.ok((await body.next()).done)
  t.same(seen, ['one', 'two', 'three'], 'every chunk seen (hashed) before it went out')
})

t.test('a failed verdict ends the body without its closing delimiter: no complete form', async (t) => {
  const parts = uploadFormParts([['name', 'demo']], 'demo-1.0.tar.gz')
  const out: Buffer[] = []
  const mismatch = new Error('digest mismatch')
  await t.rejects((async () => {
    for await (const c of uploadBody(parts, chunks('abc', 'def'), () => {}, () => { throw mismatch })) out.push(Buffer.from(c))
  })(), mismatch)
  const sent = Buffer.concat(out)
  t.equal(sent.indexOf(parts.tail), -1, 'the closing delimiter was never written')
  t.equal(parseMultipart(sent, parts.boundary), undefined, 'what was written is no complete multipart body')
  const tooLarge = new Error('too large')
  const cut: Buffer[] = []
  await t.rejects((async () => {
    for await (const c of uploadBody(parts, chunks('abc', 'def'), (c) => { if (Buffer.from(c).toString() === 'def') throw tooLarge }, () => {})) cut.push(Buffer.from(c))
  })(), tooLarge)
  t.equal(Buffer.concat(cut).toString().endsWith('abc'), true, 'a chunk refused by onChunk (the size limit) is never written')
})

t.test('the fields: twine\'s, from the file name and the PEP 658 metadata', async (t) => {
  t.same(distributionFacts('Demo_Pkg-1.0.0-py3-none-any.whl', 'demo-pkg'), { name: 'Demo_Pkg', version: '1.0.0', filetype: 'bdist_wheel', pyversion: 'py3' })
  t.same(distributionFacts('numpy-2.0.0-1-cp311.cp312-abi3-manylinux_2_17_x86_64.whl', 'numpy'), { name: 'numpy', version: '2.0.0', filetype: 'bdist_wheel', pyversion: 'cp311.cp312' })
  t.same(distributionFacts('demo-pkg-1.0.tar.gz', 'demo-pkg'), { name: 'demo-pkg', version: '1.0', filetype: 'sdist', pyversion: 'source' }, 'a legacy sdist whose name part has a dash')
  t.same(distributionFacts('Demo-2.0rc1.zip', 'demo'), { name: 'Demo', version: '2.0rc1', filetype: 'sdist', pyversion: 'source' })
  t.equal(distributionFacts('other-1.0.tar.gz', 'demo'), undefined, 'another project\'s file')

  const facts = distributionFacts('demo_pkg-1.0.0-py3-none-any.whl', 'demo-pkg')!
  const bare = uploadFields({ facts, project: 'demo-pkg', sha256: 'a'.repeat(64), md5: undefined, metadata: undefined })
  t.notOk(bare.usedMetadata)
  t.same(bare.fields, [
    ['name', 'demo-pkg'], ['version', '1.0.0'], ['filetype', 'bdist_wheel'], ['pyversion', 'py3'], ['metadata_version', DEFAULT_METADATA_VERSION],
    ['sha256_digest', 'a'.repeat(64)], [':action', 'file_upload'], ['protocol_version', '1'],
  ], 'without .metadata: the file name\'s facts, the default metadata version, no md5 when none is known')

  const metadata = 'Metadata-Version: 2.1\nName: Demo_Pkg\nVersion: 1.0.0\nSummary: A demo\nRequires-Python: >=3.8\nRequires-Dist: six>=1\nRequires-Dist: idna\nClassifier: A\nDescription: first\n        second\nUnknown-Header: x\n'
  const full = uploadFields({ facts, project: 'demo-pkg', sha256: 'b'.repeat(64), md5: 'c'.repeat(32), metadata })
  t.ok(full.usedMetadata)
  t.same(full.fields.slice(0, 5), [['name', 'Demo-Pkg'], ['version', '1.0.0'], ['filetype', 'bdist_wheel'], ['pyversion', 'py3'], ['metadata_version', '2.1']])
  const get = (n: string): string[] => full.fields.filter(([f]) => f === n).map(([, v]) => v)
  t.same(get('summary'), ['A demo'])
  t.same(get('requires_python'), ['>=3.8'])
  t.same(get('requires_dist'), ['six>=1', 'idna'])
  t.same(get('classifiers'), ['A'])
  t.same(get('description'), ['first\nsecond'], 'a folded header joined')
  t.same(get('md5_digest'), ['c'.repeat(32)])
  t.same(get('Unknown-Header'), [], 'only the fields twine sends')

  const otherVersion = uploadFields({ facts, project: 'demo-pkg', sha256: 'b'.repeat(64), md5: undefined, metadata: metadata.replace('Version: 1.0.0', 'Version: 9.9') })
  t.notOk(otherVersion.usedMetadata, 'metadata naming another version is not used')
  t.same(otherVersion.fields.find(([f]) => f === 'metadata_version'), ['metadata_version', DEFAULT_METADATA_VERSION])

  t.same(parseMetadataHeaders('A: 1\n\nBody: not a header\n'), [['A', '1']], 'the header block ends at the first blank line')
  t.equal(await readMetadataHeader(chunks('Name: x\nVer', 'sion: 1\n\nlong description...')), 'Name: x\nVersion: 1')
  t.equal(await readMetadataHeader(chunks('A: '.padEnd(100, 'x')), 50), undefined, 'a header block past the bound is not used')
})
