import t from 'tap'
import { MOUNT_STATE, Readiness } from '../../server/health/readiness.js'

t.test('one mount awaiting its database does not take the other out of rotation (SPEC.md 3.1 rule 1)', async (t) => {
  const readiness = new Readiness()
  readiness.addMount('js', false)
  readiness.addMount('py', true)
  t.same(readiness.body(), { status: 'not_ready', mounts: { js: 'ready', py: MOUNT_STATE.awaiting } }, 'not before the role started')
  readiness.markStarted()
  t.same(readiness.body(), { status: 'ready', mounts: { js: 'ready', py: MOUNT_STATE.awaiting } }, 'the process serves js: in rotation')
  t.same(readiness.body('js'), { status: 'ready', mounts: { js: 'ready' } })
  t.same(readiness.body('py'), { status: 'not_ready', mounts: { py: MOUNT_STATE.awaiting } }, 'the py mount alone is not ready')
  readiness.markAdvisoryReady('py')
  t.same(readiness.body('py').status, 'ready')
})

t.test('no mount ready: not ready; a failing process condition fails every answer and is named', async (t) => {
  const readiness = new Readiness()
  readiness.addMount('js', true)
  readiness.markStarted()
  t.equal(readiness.body().status, 'not_ready')
  readiness.markAdvisoryReady('js')
  let writable = true
  readiness.addCondition('queue', () => (writable ? undefined : 'journal_unwritable'))
  t.same(readiness.body(), { status: 'ready', mounts: { js: 'ready' } }, 'no conditions member while all hold')
  writable = false
  t.same(readiness.body(), { status: 'not_ready', mounts: { js: 'ready' }, conditions: { queue: 'journal_unwritable' } })
  t.same(readiness.body('js').status, 'not_ready')
  writable = true
  t.equal(readiness.body().status, 'ready', 'back once the condition holds again')
  readiness.startDraining()
  t.same(readiness.body(), { status: 'not_ready', mounts: { js: MOUNT_STATE.draining } })
})

t.test('hasMount', async (t) => {
  const readiness = new Readiness()
  readiness.addMount('js', false)
  t.ok(readiness.hasMount('js'))
  t.notOk(readiness.hasMount('py'))
  t.notOk(readiness.hasMount('../x'))
})
