/**
 * A version manifest for scripted upstream packuments (the history-rule
 * route tests): its name, version and a `dist` whose tarball is served by
 * `origin`, with a made-up integrity and shasum, plus whatever else the
 * history needs (`scripts`, `dependencies`, trust evidence in `dist`).
 */
export function fixtureManifest(origin: string, name: string, version: string, extra: Record<string, unknown> = {}, dist: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    version,
    dist: {
      integrity: `sha512-${Buffer.from(`${name}@${version}`.padEnd(64, '.')).toString('base64')}`,
      shasum: '0123456789abcdef0123456789abcdef01234567',
      tarball: `${origin}/${name}/-/${name}-${version}.tgz`,
      ...dist,
    },
    ...extra,
  }
}
