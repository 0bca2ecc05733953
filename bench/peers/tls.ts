/**
 * A throwaway certificate authority and a server certificate for 127.0.0.1
 * and localhost, made with the real `openssl` CLI in a temp folder (PEERS.md,
 * "TLS for the public leg"). Clients trust `caPem`; verification is never
 * switched off anywhere.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

export interface TestCa {
  readonly dir: string
  readonly caFile: string
  readonly caPem: string
  readonly keyFile: string
  readonly certFile: string
  readonly keyPem: string
  readonly certPem: string
  remove(): Promise<void>
}

export async function makeTestCa(): Promise<TestCa> {
  const dir = await mkdtemp(join(tmpdir(), 'proxy-ca-'))
  const p = (name: string): string => join(dir, name)
  await run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2',
    '-subj', '/CN=proxy test CA', '-keyout', p('ca.key'), '-out', p('ca.pem')])
  await run('openssl', ['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost',
    '-keyout', p('server.key'), '-out', p('server.csr')])
  await writeFile(p('ext.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n')
  await run('openssl', ['x509', '-req', '-in', p('server.csr'), '-CA', p('ca.pem'), '-CAkey', p('ca.key'),
    '-CAcreateserial', '-days', '2', '-extfile', p('ext.cnf'), '-out', p('server.pem')])
  const [caPem, keyPem, certPem] = await Promise.all([
    readFile(p('ca.pem'), 'utf8'), readFile(p('server.key'), 'utf8'), readFile(p('server.pem'), 'utf8'),
  ])
  return {
    dir, caFile: p('ca.pem'), caPem, keyFile: p('server.key'), certFile: p('server.pem'), keyPem, certPem,
    remove: () => rm(dir, { recursive: true, force: true }),
  }
}
