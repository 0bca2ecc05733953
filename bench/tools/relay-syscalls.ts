/**
 * Counts the relay's syscalls per artifact, which timing on a shared
 * machine cannot show: a plain origin serving one 10 MiB file, the relay
 * runner (bench/runners/artifact-relay-server.ts) in front of it, and 200
 * sequential keep-alive GETs while `strace -c` watches the relay process.
 * Prints strace's table for epoll_ctl, read and recvfrom (issue 18: the
 * upstream socket kept reading past a response head, 584 epoll_ctl calls
 * for 200 relays before, 330 after).
 *
 * `npm run build && node dist/bench/tools/relay-syscalls.js` (needs strace
 * and ptrace rights; not part of `npm run bench`).
 */
import { fork, spawn } from 'node:child_process'
import { Agent, createServer, get } from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const REQUESTS = 200
const WARM_UP = 20
const body = Buffer.alloc(10 * 1024 * 1024, 7)

const origin = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length })
  res.end(body)
})
await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
const runner = join(dirname(fileURLToPath(import.meta.url)), '..', 'runners', 'artifact-relay-server.js')
const relay = fork(runner, [`http://127.0.0.1:${(origin.address() as AddressInfo).port}`], { stdio: 'inherit' })
const port = await new Promise<number>((resolve) => relay.once('message', (m) => resolve((m as { port: number }).port)))
const agent = new Agent({ keepAlive: true, maxSockets: 1 })
const fetchOne = (): Promise<number> => new Promise((resolve, reject) => {
  get(`http://127.0.0.1:${port}/js/pkg/-/pkg-1.0.0.tgz`, { agent }, (res) => {
    let bytes = 0
    res.on('data', (chunk: Buffer) => { bytes += chunk.length })
    res.on('end', () => resolve(bytes))
  }).on('error', reject)
})

try {
  for (let i = 0; i < WARM_UP; i++) await fetchOne()
  const strace = spawn('strace', ['-f', '-c', '-e', 'trace=epoll_ctl,read,recvfrom', '-p', String(relay.pid)], { stdio: ['ignore', 'ignore', 'pipe'] })
  let table = ''
  strace.stderr.on('data', (d: Buffer) => { table += d.toString() })
  // strace needs a moment to attach to every thread.
  await new Promise((resolve) => setTimeout(resolve, 1000))
  let bytes = 0
  for (let i = 0; i < REQUESTS; i++) bytes += await fetchOne()
  strace.kill('SIGINT')
  await new Promise((resolve) => strace.once('exit', resolve))
  console.log(`${REQUESTS} relays of ${body.length} bytes (${bytes} bytes read)`)
  console.log(table.split('\n').filter((line) => /calls|epoll_ctl|read|recvfrom|total/.test(line)).join('\n'))
} finally {
  relay.kill()
  origin.close()
  agent.destroy()
}
