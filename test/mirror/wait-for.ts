/**
 * Polls a condition until it holds, for asynchronous effects a test cannot
 * await directly (a job the worker runs after the response). The deadline
 * only ends a failing test; nothing asserts on how long it took.
 */
export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await condition()) return
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
