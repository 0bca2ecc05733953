/**
 * The OSV export archive (`{base}/{Ecosystem}/all.zip`, one `<ID>.json`
 * record per entry). A zip's central directory sits at its end, so the
 * archive is streamed to a temporary file first (bounded memory whatever its
 * size) and then read entry by entry with yauzl; each entry is one small JSON
 * record, parsed on its own.
 */
import { createWriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import type { Dispatcher } from 'undici'
import yauzl from 'yauzl'
import { ServiceError } from '../../errors.js'
import type { OsvRecord } from '../artifact/osv-record.js'
import { getSource } from './source-request.js'

/** One OSV record is a few kB; anything far larger is not a record (or is a zip bomb). */
export const MAX_RECORD_BYTES = 16 * 1024 * 1024

export interface DownloadedArchive {
  readonly path: string
  readonly bytes: number
  /** Removes the temporary folder; safe to call twice. */
  dispose(): Promise<void>
}

/**
 * Streams `url` into a new temporary folder under `tmpDir`. Throws
 * UPSTREAM_UNAVAILABLE for a transport failure or a non-2xx answer (redirects
 * are not followed), leaving nothing behind. A body that fails mid-stream is
 * fetched once more.
 */
export async function downloadArchive(url: URL, tmpDir: string, dispatcher?: Dispatcher): Promise<DownloadedArchive> {
  try {
    return await downloadOnce(url, tmpDir, dispatcher)
  } catch (err) {
    // A connection lost mid-body is worth one more GET; a refusal is not.
    if (err instanceof ServiceError && err.data?.transport === true) return await downloadOnce(url, tmpDir, dispatcher)
    throw err
  }
}

async function downloadOnce(url: URL, tmpDir: string, dispatcher?: Dispatcher): Promise<DownloadedArchive> {
  const dir = await mkdtemp(join(tmpDir, 'osv-export-'))
  const dispose = (): Promise<void> => rm(dir, { recursive: true, force: true })
  const path = join(dir, 'all.zip')
  try {
    let res: Dispatcher.ResponseData
    try {
      res = await getSource(url, dispatcher)
    } catch (err) {
      throw new ServiceError('UPSTREAM_UNAVAILABLE', { message: 'the OSV export could not be fetched', cause: err })
    }
    if (res.statusCode < 200 || res.statusCode > 299) {
      await res.body.dump()
      throw new ServiceError('UPSTREAM_UNAVAILABLE', { message: `the OSV export answered ${res.statusCode}`, data: { status: res.statusCode } })
    }
    const out = createWriteStream(path)
    try {
      await pipeline(res.body, out)
    } catch (err) {
      throw new ServiceError('UPSTREAM_UNAVAILABLE', { message: 'the OSV export download failed', cause: err, data: { transport: true } })
    }
    return { path, bytes: out.bytesWritten, dispose }
  } catch (err) {
    await dispose()
    throw err
  }
}

function decodeFailure(message: string, cause?: unknown): ServiceError {
  return new ServiceError('UPSTREAM_DECODE', { message, cause })
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of stream) {
    const b = chunk as Buffer
    size += b.length
    if (size > MAX_RECORD_BYTES) throw decodeFailure('an OSV export entry exceeds the record size limit')
    chunks.push(b)
  }
  return Buffer.concat(chunks, size)
}

/**
 * Yields every `.json` record of the archive at `path`, in archive order.
 * Throws UPSTREAM_DECODE for a corrupt archive or an entry that is not a JSON
 * object.
 */
export async function* readArchiveRecords(path: string): AsyncGenerator<OsvRecord> {
  let zip: yauzl.ZipFile
  try {
    zip = await yauzl.openPromise(path, { lazyEntries: true, validateEntrySizes: true, strictFileNames: false })
  } catch (err) {
    throw decodeFailure('the OSV export is not a readable zip archive', err)
  }
  try {
    for await (const entry of zip.eachEntry()) {
      if (entry.fileName.endsWith('/') || !entry.fileName.endsWith('.json')) continue
      if (entry.uncompressedSize > MAX_RECORD_BYTES) throw decodeFailure('an OSV export entry exceeds the record size limit')
      let record: unknown
      try {
        const stream = await zip.openReadStreamPromise(entry)
        record = JSON.parse((await readAll(stream)).toString('utf8'))
      } catch (err) {
        if (err instanceof ServiceError) throw err
        throw decodeFailure(`the OSV export entry ${entry.fileName} could not be read`, err)
      }
      if (record === null || typeof record !== 'object' || Array.isArray(record)) {
        throw decodeFailure(`the OSV export entry ${entry.fileName} is not a JSON object`)
      }
      yield record as OsvRecord
    }
  } catch (err) {
    if (err instanceof ServiceError) throw err
    throw decodeFailure('the OSV export is a corrupt zip archive', err)
  } finally {
    zip.close()
  }
}
