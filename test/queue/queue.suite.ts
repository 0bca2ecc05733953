/**
 * The one test suite every Queue passes (STYLE.md rule 8): the embedded
 * queue now, the SQS one (against local-aws-sqs) later.
 *
 * It avoids what local-aws-sqs gets wrong (PEERS.md): no receive count is
 * asserted after a changeVisibility, which it counts as a receive.
 */
import type { Test } from 'tap'
import { isServiceError } from '../../engine/errors.js'
import type { Queue, QueueMessage } from '../../engine/queue/queue.js'
import { QueueFailureReason } from '../../engine/queue/queue.js'

export interface QueueHarness {
  /** A queue with a redrive policy of `maxReceiveCount` into `deadLetter`. */
  readonly queue: Queue
  readonly deadLetter: Queue
  /** Whether a pending message answers a send with its dedupKey (embedded: yes; an SQS standard queue: no). */
  readonly deduplicates: boolean
  /** Lets `seconds` pass on the queue's clock: a ManualClock, or real time for SQS. */
  elapse(seconds: number): Promise<void>
  close(): Promise<void>
}

export type QueueFactory = (options: { maxReceiveCount: number }) => Promise<QueueHarness>

export function queueSuite(t: Test, makeHarness: QueueFactory): void {
  const withQueue = (name: string, maxReceiveCount: number, body: (t: Test, h: QueueHarness) => Promise<void>): void => {
    t.test(name, async (t) => {
      const h = await makeHarness({ maxReceiveCount })
      t.teardown(() => h.close())
      await body(t, h)
    })
  }

  withQueue('send, receive and delete', 5, async (t, { queue }) => {
    const { messageId } = await queue.send('{"url":"http://127.0.0.1/a.tgz"}')
    t.match(messageId, /\S/)
    const [message, ...rest] = await queue.receive({ max: 10, visibilitySeconds: 30 })
    t.same(rest, [])
    t.match(message, { messageId, body: '{"url":"http://127.0.0.1/a.tgz"}', receiveCount: 1 })
    t.match(message?.receiptHandle, /\S/)
    await queue.delete(message!.receiptHandle)
    t.same(await queue.receive({ max: 10, visibilitySeconds: 30 }), [], 'gone after delete')
  })

  withQueue('receive returns at most max messages, each once', 5, async (t, { queue }) => {
    const sent = new Set<string>()
    for (let i = 0; i < 7; i++) sent.add((await queue.send(`job ${i}`)).messageId)
    const first = await queue.receive({ max: 5, visibilitySeconds: 30 })
    t.ok(first.length >= 1 && first.length <= 5, `1 to 5 messages (${first.length})`)
    const seen = [...first]
    for (let guard = 0; guard < 10 && seen.length < 7; guard++) seen.push(...await queue.receive({ max: 5, visibilitySeconds: 30 }))
    t.same(new Set(seen.map((m) => m.messageId)), sent, 'all seven, none twice')
    t.equal(seen.length, 7)
  })

  withQueue('a received message is hidden for its window, then delivered again', 5, async (t, h) => {
    const { messageId } = await h.queue.send('job')
    const [first] = await h.queue.receive({ max: 1, visibilitySeconds: 2 })
    t.equal(first?.messageId, messageId)
    t.same(await h.queue.receive({ max: 1, visibilitySeconds: 2 }), [], 'hidden inside the window')
    await h.elapse(3)
    const [second] = await h.queue.receive({ max: 1, visibilitySeconds: 30 })
    t.equal(second?.messageId, messageId, 'back after the window')
    t.equal(second?.receiveCount, 2)
    t.not(second?.receiptHandle, first?.receiptHandle, 'each delivery has its own receipt')
  })

  withQueue('renewal keeps a message hidden past its first window', 5, async (t, h) => {
    await h.queue.send('long job')
    const [message] = await h.queue.receive({ max: 1, visibilitySeconds: 2 })
    await h.elapse(1)
    await h.queue.changeVisibility(message!.receiptHandle, 2)
    await h.elapse(1.5)
    t.same(await h.queue.receive({ max: 1, visibilitySeconds: 30 }), [], 'still hidden after the first window')
    await h.elapse(1)
    const [again] = await h.queue.receive({ max: 1, visibilitySeconds: 30 })
    t.equal(again?.messageId, message?.messageId, 'visible once the renewed window ends')
  })

  withQueue('changeVisibility 0 releases a message at once', 5, async (t, { queue }) => {
    const { messageId } = await queue.send('transient failure')
    const [message] = await queue.receive({ max: 1, visibilitySeconds: 300 })
    await queue.changeVisibility(message!.receiptHandle, 0)
    const [again] = await queue.receive({ max: 1, visibilitySeconds: 300 })
    t.equal(again?.messageId, messageId)
  })

  withQueue('the receive count grows with every delivery', 5, async (t, { queue }) => {
    await queue.send('counted')
    const counts: number[] = []
    for (let i = 0; i < 3; i++) {
      const [message] = await queue.receive({ max: 1, visibilitySeconds: 0 })
      counts.push(message?.receiveCount ?? -1)
    }
    t.same(counts, [1, 2, 3])
  })

  withQueue('a message over its receive budget goes to the dead-letter queue', 2, async (t, { queue, deadLetter }) => {
    const attributes = await queue.attributes()
    t.equal(attributes.redrive?.maxReceiveCount, 2)
    t.match(attributes.redrive?.deadLetterTarget, /\S/)
    await queue.send('poison')
    const counts: number[] = []
    for (let i = 0; i < 2; i++) {
      const [message] = await queue.receive({ max: 1, visibilitySeconds: 0 })
      counts.push(message?.receiveCount ?? -1)
    }
    t.same(counts, [1, 2])
    t.same(await queue.receive({ max: 1, visibilitySeconds: 0 }), [], 'not delivered a third time')
    const dead = await deadLetter.receive({ max: 10, visibilitySeconds: 30 })
    t.equal(dead.length, 1)
    t.equal(dead[0]?.body, 'poison')
  })

  withQueue('a long poll returns when a message arrives', 5, async (t, { queue }) => {
    const polling = queue.receive({ max: 1, visibilitySeconds: 30, waitSeconds: 10 })
    await new Promise((resolve) => setImmediate(resolve))
    await queue.send('arrived during the poll')
    const messages = await polling
    t.equal(messages[0]?.body, 'arrived during the poll')
  })

  withQueue('an aborted long poll resolves with nothing', 5, async (t, { queue }) => {
    const controller = new AbortController()
    const polling = queue.receive({ max: 1, visibilitySeconds: 30, waitSeconds: 20, signal: controller.signal })
    setImmediate(() => controller.abort())
    t.same(await polling, [])
  })

  withQueue('a receipt of an earlier delivery is stale', 5, async (t, { queue }) => {
    await queue.send('redelivered')
    const [first] = await queue.receive({ max: 1, visibilitySeconds: 0 })
    const [second] = await queue.receive({ max: 1, visibilitySeconds: 300 })
    t.equal(second?.messageId, first?.messageId)
    await rejectsWithReason(t, queue.changeVisibility(first!.receiptHandle, 300), QueueFailureReason.RECEIPT_HANDLE_STALE)
    // SQS answers a stale delete with success but keeps the message; embedded refuses it.
    // Either way the current receiver still owns the message.
    await queue.delete(first!.receiptHandle).catch((error: unknown) => {
      t.ok(isServiceError(error, 'QUEUE_FAILURE'), 'a refused stale delete is a QUEUE_FAILURE')
    })
    await queue.changeVisibility(second!.receiptHandle, 0)
    const [third] = await queue.receive({ max: 1, visibilitySeconds: 300 })
    t.equal(third?.messageId, first?.messageId, 'the stale delete did not delete')
  })

  withQueue('sendBatch sends every entry once, answering each in order', 5, async (t, { queue }) => {
    const bodies = Array.from({ length: 10 }, (_, i) => `batched ${i}`)
    const outcomes = await queue.sendBatch(bodies.map((body) => ({ body })))
    t.equal(outcomes.length, 10)
    t.ok(outcomes.every((o) => o.failure === undefined && /\S/.test(o.messageId)), 'every entry sent')
    const seen: QueueMessage[] = []
    for (let guard = 0; guard < 10 && seen.length < 10; guard++) seen.push(...await queue.receive({ max: 10, visibilitySeconds: 30 }))
    t.same(seen.map((m) => m.body).sort(), [...bodies].sort(), 'each body once')
    const idOf = new Map(seen.map((m) => [m.body, m.messageId]))
    t.same(outcomes.map((o) => o.messageId), bodies.map((b) => idOf.get(b)), 'outcomes in entry order')
  })

  withQueue('an entry refused on its own leaves the others of its batch sent', 5, async (t, { queue }) => {
    const outcomes = await queue.sendBatch([{ body: 'first' }, { body: 'nul \0' }, { body: 'third', delaySeconds: 901 }, { body: 'fourth' }])
    t.ok(outcomes[0]?.failure === undefined && outcomes[3]?.failure === undefined, 'the valid entries are sent')
    for (const index of [1, 2]) {
      const failure = outcomes[index]?.failure
      t.ok(isServiceError(failure, 'QUEUE_FAILURE') && failure.data?.['reason'] === QueueFailureReason.INVALID_ARGUMENT, `entry ${index} refused as invalid`)
    }
    const seen: QueueMessage[] = []
    for (let guard = 0; guard < 10 && seen.length < 2; guard++) seen.push(...await queue.receive({ max: 10, visibilitySeconds: 30 }))
    t.same(seen.map((m) => m.body).sort(), ['first', 'fourth'])
  })

  withQueue('a batch of none, of more than ten or over 256 KiB in all is refused whole', 5, async (t, { queue }) => {
    const refused = (p: Promise<unknown>, what: string) => rejectsWithReason(t, p, QueueFailureReason.INVALID_ARGUMENT, what)
    await refused(queue.sendBatch([]), 'no entries')
    await refused(queue.sendBatch(Array.from({ length: 11 }, (_, i) => ({ body: `job ${i}` }))), 'eleven entries')
    await refused(queue.sendBatch(Array.from({ length: 2 }, () => ({ body: 'x'.repeat(140_000) }))), '280 KB of bodies')
    t.same(await queue.receive({ max: 10, visibilitySeconds: 30 }), [], 'nothing of them was sent')
  })

  withQueue('keyed entries of one batch: a pending twin answers the second when the queue de-duplicates', 5, async (t, { queue, deduplicates }) => {
    const outcomes = await queue.sendBatch([{ body: 'artifact a', dedupKey: 'a' }, { body: 'artifact a again', dedupKey: 'a' }, { body: 'artifact b', dedupKey: 'b' }])
    t.ok(outcomes.every((o) => o.failure === undefined), 'no entry fails')
    const seen: QueueMessage[] = []
    for (let guard = 0; guard < 5; guard++) seen.push(...await queue.receive({ max: 10, visibilitySeconds: 30 }))
    if (deduplicates) {
      t.same(outcomes[1], { messageId: outcomes[0]?.messageId, deduplicated: true })
      t.same(seen.map((m) => m.body).sort(), ['artifact a', 'artifact b'])
    } else {
      t.notOk(outcomes[1]?.deduplicated)
      t.equal(seen.length, 3, 'every entry sent')
    }
  })

  withQueue('arguments outside the SQS limits are refused', 5, async (t, { queue }) => {
    const refused = (p: Promise<unknown>, what: string) => rejectsWithReason(t, p, QueueFailureReason.INVALID_ARGUMENT, what)
    await refused(queue.send(''), 'empty body')
    await refused(queue.send('x'.repeat(262_145)), 'body over 256 KiB')
    await refused(queue.send('nul \0'), 'a character SQS refuses')
    await refused(queue.send('x', { delaySeconds: 901 }), 'delay over 900 s')
    await refused(queue.receive({ max: 0, visibilitySeconds: 30 }), 'max 0')
    await refused(queue.receive({ max: 11, visibilitySeconds: 30 }), 'max 11')
    await refused(queue.receive({ max: 1, visibilitySeconds: 43_201 }), 'visibility over twelve hours')
    await refused(queue.receive({ max: 1, visibilitySeconds: 1.5 }), 'fractional visibility')
    await refused(queue.receive({ max: 1, visibilitySeconds: 30, waitSeconds: 21 }), 'wait over 20 s')
  })
}

/**
 * tap's t.rejects cannot match a ServiceError (it redefines `name` on the
 * frozen error): assert on the code and reason instead.
 */
export async function rejectsWithReason(t: Test, promise: Promise<unknown>, reason: string, message = `rejects with ${reason}`): Promise<void> {
  try {
    await promise
    t.fail(`${message}: it resolved`)
  } catch (error) {
    t.ok(isServiceError(error, 'QUEUE_FAILURE') && error.data?.['reason'] === reason, message, { error })
  }
}

export type { QueueMessage }
