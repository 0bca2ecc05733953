/**
 * A client that leaves the artifact route calls its upstream request off on
 * both legs, whatever that request is waiting for (SPEC.md 4.4; STYLE.md
 * rule 1: the finish of a response aborts the upstream). The route does it
 * with an AbortCue (engine/upstream/http1/request-abort.ts), not an
 * AbortSignal: these pin down that it still reaches the wait for a free
 * connection, the wait for the head, and the version selection, which still
 * takes an AbortSignal. The public leg's wait for the head and the mid-body
 * departure are in test/artifact/relay-faults.test.ts.
 */
import t from 'tap'
import type { IncomingMessage } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { request } from 'undici'
import { makeClient, startServer } from '../upstream/servers.js'
import { startArtifactRoute } from '../artifact/harness.js'

/** Promise.withResolvers is Node 22; the machines run Node 20. */
function deferred<T = void>(): { promise: Promise<T>, resolve: (value: T) => void } {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => { resolve = r })
  return { promise, resolve }
}

/** Sends a GET through the route, then leaves once `ready` resolves; settles when the client side is done. */
async function leaveWhen(origin: string, dispatcher: import('undici').Dispatcher, ready: Promise<unknown>): Promise<void> {
  const controller = new AbortController()
  const pending = request(`${origin}/js/a/-/a-1.0.0.tgz`, { dispatcher, signal: controller.signal }).catch((e: unknown) => e)
  await ready
  controller.abort()
  await pending
}

t.test('private leg: a client that leaves before the head closes the upstream connection', async (t) => {
  const seen = deferred<IncomingMessage>()
  const closed = deferred()
  const up = await startServer(t, (req) => {
    req.socket.once('close', () => closed.resolve())
    seen.resolve(req)
  }) // never answers
  const route = await startArtifactRoute(t, { privateClient: makeClient(t, { url: up.origin, trusted: true }).client })
  await leaveWhen(route.origin, route.dispatcher, seen.promise)
  t.ok(await Promise.race([closed.promise.then(() => true), sleep(5_000).then(() => false)]), 'the upstream connection closed')
  t.ok((await seen.promise).socket.destroyed, 'the upstream socket closed')
  await sleep(20)
  const relays = route.counters.snapshot().relays
  t.equal(relays.private.delivered + relays.private.miss + relays.private.failed, 0, 'nothing was relayed, and no miss fell through')
  t.equal(route.selects(), 0, 'the public leg was never tried')
})

t.test('private leg: a client that leaves while waiting for a free connection never sends its request', async (t) => {
  const first = deferred<IncomingMessage>()
  let answer: (() => void) | undefined
  const up = await startServer(t, (req, res) => {
    const reply = (): void => { res.writeHead(200, { 'content-length': 1 }); res.end('x') }
    if (answer === undefined) answer = reply
    else reply()
    first.resolve(req)
  })
  // One connection: the second request waits for the first one's.
  const { client } = makeClient(t, { url: up.origin, trusted: true, connections: 1 })
  const route = await startArtifactRoute(t, { privateClient: client })
  const held = request(`${route.origin}/js/a/-/a-1.0.0.tgz`, { dispatcher: route.dispatcher })
  await first.promise
  // The second client leaves while its request waits for the one connection.
  await leaveWhen(route.origin, route.dispatcher, sleep(50))
  answer?.()
  const res = await held
  t.equal(res.statusCode, 200)
  t.equal(await res.body.text(), 'x')
  // The connection went back to the pool, not to the departed waiter (which would have closed it).
  const next = await request(`${route.origin}/js/a/-/a-1.0.0.tgz`, { dispatcher: route.dispatcher })
  t.equal(await next.body.text(), 'x')
  await sleep(50)
  t.equal(up.seen.length, 2, 'the departed client\'s request never reached the upstream')
  t.equal(up.connections(), 1, 'one kept-alive connection served both others')
  t.equal(route.counters.snapshot().relays.private.delivered, 2)
})

t.test('public leg: a client that leaves during the version selection aborts its signal', async (t) => {
  const aborted = deferred<unknown>()
  const asked = deferred()
  const route = await startArtifactRoute(t, {
    publicClient: makeClient(t, { url: 'https://127.0.0.1:9/', trusted: false }).client,
    selectVersion: (_name, _file, signal) => new Promise((_resolve, reject) => {
      signal.addEventListener('abort', () => { aborted.resolve(signal.reason); reject(signal.reason) }, { once: true })
      asked.resolve()
    }),
  })
  await leaveWhen(route.origin, route.dispatcher, asked.promise)
  const reason = await Promise.race([aborted.promise, sleep(5_000).then(() => 'not aborted')])
  t.ok(reason instanceof Error, 'the signal aborted with a reason')
  t.equal((reason as { code?: unknown }).code, 'UPSTREAM_UNAVAILABLE')
  await sleep(20)
  t.equal(route.counters.snapshot().relays.public.failed, 0, 'a departed client is not counted as a failure')
})
