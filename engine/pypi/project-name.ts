/**
 * PEP 503 project names: the normal form is the name lower-cased with every
 * run of `-`, `_` and `.` replaced by one `-`. Two names are the same
 * project exactly when their normal forms are equal, which is how file
 * names, upstream pages and rule names are matched.
 *
 * A valid name (PEP 508 / core metadata "Name") is ASCII letters and digits,
 * with `-`, `_`, `.` only between them. `isValidProjectName` is what a route
 * checks before a name goes into an upstream URL.
 */

const SEPARATOR_RUNS = /[-_.]+/g
const VALID_NAME = /^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$/i

/** A generous bound; PyPI itself caps names well below this. */
export const MAX_PROJECT_NAME_LENGTH = 200

/** The PEP 503 normal form of a project name. */
export function normalizeProjectName(name: string): string {
  return name.replace(SEPARATOR_RUNS, '-').toLowerCase()
}

/** Whether the name is a valid project name (PEP 508) within MAX_PROJECT_NAME_LENGTH. */
export function isValidProjectName(name: string): boolean {
  return name.length <= MAX_PROJECT_NAME_LENGTH && VALID_NAME.test(name)
}

/** Whether the name is already in its normal form (a route answers a non-normal one by redirect or as the normal one). */
export function isNormalizedProjectName(name: string): boolean {
  return normalizeProjectName(name) === name
}
