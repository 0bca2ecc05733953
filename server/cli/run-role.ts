/**
 * The service process under the launcher (server/cli/service.ts). Started
 * with the heap flags of the memory plan; see the launcher for why.
 *
 * The launcher starts this process in a session of its own, so a signal to
 * the launcher's process group does not reach it: what stops it when the
 * launcher is gone is the loss of the IPC channel. That is wired here,
 * before the roles' modules load (main.ts replaces it with its own, which
 * flushes the log), so a launcher killed while this process still loads or
 * boots never leaves it running.
 */
import { EXIT } from '../lifecycle/exit-codes.js'

const launcherLost = (): void => { process.exit(EXIT.CANCELLED) }
process.on('disconnect', launcherLost)
if (process.send !== undefined && !process.connected) launcherLost()
// SIGHUP re-reads the policy once the role runs (main.ts); until then it must not end the process, Node's default.
process.on('SIGHUP', () => undefined)

const { main } = await import('./main.js')
await main(process.argv.slice(2))
