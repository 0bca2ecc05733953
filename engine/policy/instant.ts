/**
 * Instants in the policy (a freeze's `at`, a waiver's `expires`): RFC 3339
 * date-times with an explicit offset (`2026-03-01T12:00:00Z`,
 * `2026-03-01T13:00:00+01:00`), so every replica reads the same moment
 * whatever its time zone. A local time without an offset, a bare date, or a
 * date the calendar does not have (`2026-02-30`) is refused: Date.parse
 * would read the first two in the reader's zone and roll the third over
 * into March.
 */

/** RFC 3339 section 5.6 `date-time`; a leap second (`:60`) is refused, as Date.parse refuses it. */
const RFC3339_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$'

const RFC3339 = new RegExp(RFC3339_PATTERN)

/** Milliseconds since the epoch, or a sentence saying why `text` is no RFC 3339 instant. */
export function parseInstant(text: string): number | string {
  if (!RFC3339.test(text)) return `"${text}" is not an RFC 3339 instant with an offset (e.g. 2026-03-01T12:00:00Z)`
  const year = Number(text.slice(0, 4))
  const month = Number(text.slice(5, 7))
  const day = Number(text.slice(8, 10))
  const hour = Number(text.slice(11, 13))
  const minute = Number(text.slice(14, 16))
  const second = Number(text.slice(17, 19))
  const calendar = new Date(Date.UTC(year, month - 1, day))
  if (month < 1 || month > 12 || calendar.getUTCMonth() !== month - 1 || calendar.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59) {
    return `"${text}" is no date-time of the calendar`
  }
  const offset = /([+-])([0-9]{2}):([0-9]{2})$/.exec(text)
  if (offset !== null && (Number(offset[2]) > 23 || Number(offset[3]) > 59)) return `"${text}" has an offset out of range`
  const ms = Date.parse(text)
  return Number.isNaN(ms) ? `"${text}" is not an RFC 3339 instant` : ms
}
