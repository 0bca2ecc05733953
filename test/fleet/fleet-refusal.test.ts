/**
 * Issue 30, "Must show": a version left half-written at the mirror target
 * (the target answers 409 to its publication although it does not hold it)
 * is dead-lettered after `limits.mirrorRefusalTries` (3) tries, with exactly
 * one error line `mirror publication refused` and no retry storm. The fleet
 * is test/fleet/fleet-rig.ts (3 proxies, 2 `service mirror` workers,
 * local-aws-sqs, Verdaccio as target, a scripted https public upstream); the
 * fault relay before the target answers 409 to every publication of the
 * package. The redrive policy's maxReceiveCount is 1 here, so the message
 * goes to the dead-letter queue on its first receive after the refused
 * delivery's window (the worker's 120 s); with 2 workers, a higher count
 * would hand the message to the worker that does not remember refusing it.
 *
 * Figures are printed as tap comments (`# scenario 4: ...`). Every process
 * is killed by its process group at teardown (test/helpers/service-process.ts).
 */
import t from 'tap'
import { MIRROR_PUBLICATION_TRIED_AGAIN, MIRROR_PUBLISH_REFUSED } from '../../engine/mirror/job-outcomes.js'
import { waitFor } from '../mirror/wait-for.js'
import { download, startFleet } from './fleet-rig.js'

const NAME = 'fleet-half-written'

function linesWithMessage(stdout: string, message: string): Record<string, unknown>[] {
  return stdout.split('\n').filter((line) => line.includes(message)).map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line['message'] === message)
}

t.test('the mirror fleet and a half-written version at the target', { timeout: 400_000 }, async (t) => {
  const fleet = await startFleet(t, { maxReceiveCount: 1 })
  const publication = { method: 'PUT', path: new RegExp(`^/${NAME}(/|$)`) }
  fleet.targetRelay.fault(publication, { kind: 'status', status: 409 })

  const downloaded = Date.now()
  t.equal(await download(fleet.proxies[0]!.port, NAME), 200, 'the artifact is served')
  await waitFor(async () => (await fleet.queueDepths()).deadLettered === 1, 'the job is dead-lettered', 300_000)
  const seconds = (Date.now() - downloaded) / 1000
  // A few more seconds: a storm would show in them.
  await new Promise((resolve) => setTimeout(resolve, 5_000))

  const stdout = fleet.workers.map((w) => w.stdout()).join('\n')
  const refused = linesWithMessage(stdout, MIRROR_PUBLISH_REFUSED)
  const triedAgain = linesWithMessage(stdout, MIRROR_PUBLICATION_TRIED_AGAIN)
  const attempts = fleet.targetRelay.count(publication)
  const depths = await fleet.queueDepths()
  t.comment(`scenario 4: dead-lettered ${seconds.toFixed(1)} s after the download; ${attempts} publish attempts, ${triedAgain.length} warnings "${MIRROR_PUBLICATION_TRIED_AGAIN}", `
    + `${refused.length} error lines "${MIRROR_PUBLISH_REFUSED}"; queue after: ${JSON.stringify(depths)}`)
  t.equal(refused.length, 1, 'exactly one error line')
  t.match(refused[0], { status: 'error', data: { package: NAME, version: '1.0.0', status: 409, tries: 3 } }, 'naming package, version, status and tries')
  t.equal(attempts, 3, 'one publish attempt per try (limits.mirrorRefusalTries), no retry storm')
  t.equal(triedAgain.length, 2, 'a warning for each try but the last')
  t.same(depths, { visible: 0, inFlight: 0, deadLettered: 1 }, 'the job is on the dead-letter queue only')
  t.equal(await fleet.heldByTarget(NAME), false, 'the target still does not hold the version')
})
