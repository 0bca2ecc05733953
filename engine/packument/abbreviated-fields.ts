/**
 * The abbreviated packument (`Accept: application/vnd.npm.install-v1+json`,
 * "corgi"): the fields npm, pnpm and yarn install from. The manifest list is
 * the one npm's own minifier keeps (npm/minify-registry-metadata), plus
 * `libc` and `hasInstallScript`, which the registry also serves.
 *
 * Decision: the abbreviated form also carries `time` (filtered like the full
 * form), because the age gates of pnpm (`minimumReleaseAge`) and yarn read it.
 */
export const ABBREVIATED_MEDIA_TYPE = 'application/vnd.npm.install-v1+json'

export const ABBREVIATED_MANIFEST_FIELDS: ReadonlySet<string> = new Set([
  'name',
  'version',
  'dependencies',
  'optionalDependencies',
  'devDependencies',
  'bundleDependencies',
  'peerDependencies',
  'peerDependenciesMeta',
  'acceptDependencies',
  'bin',
  '_hasShrinkwrap',
  'hasInstallScript',
  'directories',
  'dist',
  'engines',
  'deprecated',
  'funding',
  'os',
  'cpu',
  'libc',
])

/** Scripts whose presence makes npm's minifier set `hasInstallScript: true`. */
export const INSTALL_SCRIPTS: ReadonlySet<string> = new Set(['preinstall', 'install', 'postinstall'])
