/**
 * The syntax of HTTP header fields (RFC 9110 section 5), shared by the
 * upstream head parser, which refuses a head that breaks it, and the front
 * door, which re-checks every field before uWS writes it: a value that
 * carried CR, LF or NUL to a client could split the response or forge
 * headers (Set-Cookie, Location) there.
 */

/** RFC 9110's token: a valid field name. */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/** field-value = *field-content: VCHAR, obs-text, SP and HTAB only; never CR, LF, NUL or another control byte. */
export const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/

/** A Content-Length we report or act on: one value of 1 to 15 digits, so it stays a safe integer. */
export const CONTENT_LENGTH = /^\d{1,15}$/

export function isValidField(name: string, value: string): boolean {
  return HEADER_NAME.test(name) && FIELD_VALUE.test(value)
}
