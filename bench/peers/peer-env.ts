/**
 * The environment a peer child process (Verdaccio, a package-manager CLI)
 * gets: this process's own, without the hooks tap installs in it.
 */

/** process.env without tap's hooks (NODE_OPTIONS imports, V8 coverage, its own variables), plus `extra`. */
export function peerEnv(extra: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (key === 'NODE_OPTIONS' || key === 'NODE_V8_COVERAGE' || /^_?TAP/i.test(key)) continue
    env[key] = value
  }
  return { ...env, ...extra }
}
