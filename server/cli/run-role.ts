/**
 * The service process under the launcher (server/cli/service.ts). Started
 * with the heap flags of the memory plan; see the launcher for why.
 */
import { main } from './main.js'

await main(process.argv.slice(2))
