/**
 * The hop marker: this deployment's `Via` pseudonym, which every upstream
 * request carries, and the loop check's reading of `Via` (RFC 9110 section
 * 7.6.3): a request that passed through this deployment already names its
 * pseudonym as the received-by of one element. Every `Via` line counts (the Exchange joins
 * repeated lines into one list), every comma-separated element is read, and
 * the pseudonym must be the whole received-by token: a substring of another
 * hop's name is not ours.
 */

/** Comments may hold commas and spaces: they are dropped before the list is split. */
const COMMENT = /\((?:[^()\\]|\\.)*\)/g

export function carriesHopMarker(via: string | undefined, pseudonym: string): boolean {
  if (via === undefined) return false
  for (const element of via.replace(COMMENT, ' ').split(',')) {
    // via-element = received-protocol RWS received-by [ RWS comment ]
    const receivedBy = element.trim().split(/[ \t]+/)[1]
    if (receivedBy !== undefined && receivedBy.toLowerCase() === pseudonym.toLowerCase()) return true
  }
  return false
}

/** The `Via` pseudonym of this deployment: every replica behind one base URL shares it. An HTTP token. */
export function hopMarker(baseUrl: string): string {
  return `registry-proxy.${new URL(baseUrl).host.replace(/[^A-Za-z0-9.-]/g, '-')}`
}
