/**
 * The two RequestAborts (engine/upstream/http1/request-abort.ts): the
 * route's AbortCue and a caller's AbortSignal wrapped as one. Each holds one
 * listener, called once; `unlisten` clears only the listener it names, so a
 * finished wait cannot clear the one that took the slot over; the signal of
 * an AbortCue follows it whenever it is made.
 */
import t from 'tap'
import { AbortCue, SignalAbort, type RequestAbort } from '../../../engine/upstream/http1/request-abort.js'

const kinds: readonly { name: string, make(): { abort: RequestAbort, fire(reason: unknown): void } }[] = [
  { name: 'AbortCue', make: () => { const abort = new AbortCue(); return { abort, fire: (reason) => abort.abort(reason) } } },
  {
    name: 'SignalAbort',
    make: () => { const controller = new AbortController(); return { abort: new SignalAbort(controller.signal), fire: (reason) => controller.abort(reason) } },
  },
]

for (const kind of kinds) {
  t.test(`${kind.name}: the listener in the slot is called once, with the reason`, async (t) => {
    const { abort, fire } = kind.make()
    const calls: unknown[] = []
    const replaced = (): void => { calls.push('replaced') }
    abort.listen(replaced)
    abort.listen((reason) => calls.push(reason))
    t.equal(abort.aborted, false)
    t.equal(abort.reason, undefined)
    const reason = new Error('gone')
    fire(reason)
    fire(new Error('again'))
    t.same(calls, [reason], 'only the last listener, once')
    t.equal(abort.aborted, true)
    t.equal(abort.reason, reason)
  })

  t.test(`${kind.name}: unlisten clears only the listener it names`, async (t) => {
    const { abort, fire } = kind.make()
    const calls: string[] = []
    const first = (): void => { calls.push('first') }
    const second = (): void => { calls.push('second') }
    abort.listen(first)
    abort.listen(second)
    abort.unlisten(first)
    fire(new Error('gone'))
    t.same(calls, ['second'])

    const other = kind.make()
    other.abort.listen(first)
    other.abort.unlisten(first)
    other.fire(new Error('gone'))
    t.same(calls, ['second'], 'a cleared slot calls nothing')
  })

  t.test(`${kind.name}: its signal aborts with it, made before or after`, async (t) => {
    const before = kind.make()
    const early = before.abort.signal
    const reason = new Error('gone')
    before.fire(reason)
    t.equal(early.aborted, true)
    t.equal(early.reason, reason)
    const after = kind.make()
    after.fire(reason)
    t.equal(after.abort.signal.aborted, true, 'made after the abort, it is already aborted')
    t.equal(after.abort.signal.reason, reason)
  })
}

t.test('SignalAbort keeps one listener on the signal however often the slot changes hands', async (t) => {
  const controller = new AbortController()
  let added = 0
  let removed = 0
  const signal = controller.signal
  const add = signal.addEventListener.bind(signal)
  const remove = signal.removeEventListener.bind(signal)
  signal.addEventListener = ((...args: Parameters<AbortSignal['addEventListener']>) => { added++; add(...args) }) as AbortSignal['addEventListener']
  signal.removeEventListener = ((...args: Parameters<AbortSignal['removeEventListener']>) => { removed++; remove(...args) }) as AbortSignal['removeEventListener']
  const abort = new SignalAbort(signal)
  const fns = [(): void => {}, (): void => {}, (): void => {}]
  for (const fn of fns) abort.listen(fn)
  t.equal(added, 1)
  abort.unlisten(fns[2] as () => void)
  t.equal(removed, 1, 'the last one cleared takes the listener off the signal')
})
