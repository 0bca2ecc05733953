import t from 'tap'
import { isServiceError } from '../../engine/errors.js'
import {
  checkPackageName, encodePackageName, validateArtifactFilename, validatePackageName,
} from '../../engine/npm/names.js'

/**
 * ServiceError is frozen, and tap's t.throws tries to redefine `name` on the
 * thrown error, so the code is read here instead.
 */
function codeOf(fn: () => unknown): string {
  try {
    fn()
  } catch (e) {
    return isServiceError(e) ? e.code : `not a ServiceError: ${String(e)}`
  }
  return 'nothing thrown'
}

const accepted: ReadonlyArray<[raw: string, name: string]> = [
  ['left-pad', 'left-pad'],
  ['lodash.merge', 'lodash.merge'],
  ['@babel%2Fcore', '@babel/core'],
  ['@babel%2fcore', '@babel/core'],
  ['%40babel%2Fcore', '@babel/core'],
  ['@types%2Fnode', '@types/node'],
  ['JSONStream', 'JSONStream'], // old packages with uppercase exist: accepted on read
  ['@Acme%2FWidget', '@Acme/Widget'],
  ['http', 'http'], // a core module name is only a warning for npm
  ['a', 'a'],
  ['-', '-'],
  ["fn-(x)!~*'", "fn-(x)!~*'"],
  ['x'.repeat(214), 'x'.repeat(214)],
  [`@s%2F${'x'.repeat(211)}`, `@s/${'x'.repeat(211)}`],
]

const refused: ReadonlyArray<[raw: string, why: string]> = [
  ['', 'empty'],
  ['..', 'dot dot'],
  ['.hidden', 'leading dot'],
  ['_private', 'leading underscore'],
  ['a..b', 'dot dot inside'],
  ['a/b', 'slash in an unscoped name'],
  ['@scope/name', 'scope slash not encoded'],
  ['@scope', 'scope without a name'],
  ['@%2Fname', 'empty scope'],
  ['@scope%2F', 'empty name'],
  ['@scope%2F..', 'dot dot as the scoped name'],
  ['@scope%2F.bin', 'scoped name with a leading dot'],
  ['@..%2Fname', 'dot dot as the scope'],
  ['@scope%2Fa%2Fb', 'second encoded slash'],
  ['@scope%2Fa/b', 'second raw slash'],
  ['left%2Fpad', 'encoded slash in an unscoped name'],
  ['left%5Cpad', 'encoded backslash'],
  ['left\\pad', 'backslash'],
  ['left%00pad', 'encoded NUL'],
  ['left\u0000pad', 'NUL'],
  ['%2E%2E', 'encoded dot dot'],
  ['left%2Dpad', 'needless escape'],
  ['left pad', 'space'],
  [' left-pad', 'leading space'],
  ['left-pad\n', 'newline'],
  ['node_modules', 'reserved'],
  ['favicon.ico', 'reserved'],
  ['x'.repeat(215), 'longer than 214'],
  [`@s%2F${'x'.repeat(212)}`, 'scoped, longer than 214'],
  ['caf\u00e9', 'non-ASCII'],
  ['caf%C3%A9', 'encoded non-ASCII'],
  ['a?b', 'query character'],
  ['a#b', 'fragment character'],
  ['a:b', 'colon'],
]

t.test('validatePackageName accepts npm names and decodes the scope slash', async (t) => {
  for (const [raw, name] of accepted) t.equal(validatePackageName(raw), name, JSON.stringify(raw))
})

t.test('validatePackageName refuses with BAD_PACKAGE_NAME', async (t) => {
  for (const [raw, why] of refused) {
    t.equal(codeOf(() => validatePackageName(raw)), 'BAD_PACKAGE_NAME', why)
  }
})

t.test('encodePackageName writes the scope slash as %2f and round-trips', async (t) => {
  t.equal(encodePackageName('@babel/core'), '@babel%2fcore')
  t.equal(encodePackageName('left-pad'), 'left-pad')
  t.equal(encodePackageName("fn-(x)!~*'"), "fn-(x)!~*'")
  for (const [, name] of accepted) t.equal(validatePackageName(encodePackageName(name)), name, name)
  t.equal(codeOf(() => encodePackageName('../etc/passwd')), 'BAD_PACKAGE_NAME')
  t.equal(codeOf(() => checkPackageName('@a/b/c')), 'BAD_PACKAGE_NAME')
})

const filesAccepted: ReadonlyArray<[raw: string, name: string]> = [
  ['left-pad-1.3.0.tgz', 'left-pad-1.3.0.tgz'],
  ['core-7.24.0.tgz', 'core-7.24.0.tgz'],
  ['pkg-1.0.0-beta.1.tgz', 'pkg-1.0.0-beta.1.tgz'],
  ['pkg-1.0.0%2Bbuild.5.tgz', 'pkg-1.0.0+build.5.tgz'],
  ['pkg-1.0.0+build.5.tgz', 'pkg-1.0.0+build.5.tgz'],
]

const filesRefused: ReadonlyArray<[raw: string, why: string]> = [
  ['', 'empty'],
  ['.tgz', 'nothing but the extension'],
  ['left-pad-1.3.0.tar.gz', 'wrong extension'],
  ['left-pad-1.3.0.tgz.exe', 'extension not last'],
  ['left-pad-1.3.0', 'no extension'],
  ['a/b.tgz', 'slash'],
  ['a\\b.tgz', 'backslash'],
  ['..tgz', 'dot dot'],
  ['a..b.tgz', 'dot dot inside'],
  ['.hidden.tgz', 'leading dot'],
  ['a%2Fb.tgz', 'encoded slash'],
  ['a%2fb.tgz', 'encoded slash, lower case'],
  ['a%5Cb.tgz', 'encoded backslash'],
  ['%2E%2E.tgz', 'encoded dots'],
  ['a\u0000.tgz', 'NUL'],
  ['a%00.tgz', 'encoded NUL'],
  ['a%0A.tgz', 'encoded newline'],
  ['a%.tgz', 'malformed escape'],
  ['a%E0%A4%A.tgz', 'malformed UTF-8 escape'],
  [`${'a'.repeat(600)}.tgz`, 'too long'],
]

t.test('validateArtifactFilename accepts .tgz names', async (t) => {
  for (const [raw, name] of filesAccepted) t.equal(validateArtifactFilename(raw), name, raw)
})

t.test('validateArtifactFilename refuses with BAD_ARTIFACT_NAME', async (t) => {
  for (const [raw, why] of filesRefused) {
    t.equal(codeOf(() => validateArtifactFilename(raw)), 'BAD_ARTIFACT_NAME', why)
  }
})
