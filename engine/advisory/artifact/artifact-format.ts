/**
 * The byte format of the compiled advisory artifact (SPEC.md 2.9 leaves it
 * open; DESIGN.md "The advisory database is a compact binary artifact").
 * One artifact per ecosystem. It is loaded once into a SharedArrayBuffer and
 * read in place by every worker: fixed-width little-endian integers at
 * absolute offsets, no pointers to rebuild, nothing to parse at lookup time
 * beyond the queried version.
 *
 * All integers are little-endian; all offsets ("ref") are absolute byte
 * offsets from the start of the artifact and u32 (an artifact stays below
 * 4 GiB). Fields need no alignment (read through a DataView).
 *
 * Header (HEADER_SIZE = 128 bytes)
 *   0   u8[8]  magic "OSVADB\r\n" (the CR LF catches text-mode mangling)
 *   8   u32    format version (FORMAT_VERSION)
 *   12  u32    total length of the artifact in bytes
 *   16  u8[32] SHA-256 of bytes [48, total length): everything after it
 *   48  u8     ecosystem: 0 js (OSV npm), 1 py (OSV PyPI)
 *   49  u8     epss_status: 0 not recorded, 1 available, 2 unavailable
 *   50  u16    reserved, 0
 *   52  u32    row count: advisory records compiled in (= advisory count)
 *   56  f64    compilation time, ms since the epoch
 *   64  f64    newest advisory `modified`, ms since the epoch; NaN = never recorded
 *   72  f64    EPSS score_date, ms since the epoch; NaN = never recorded
 *   80  u32    package count P
 *   84  u32    advisory count A
 *   88  u32    ref of the package index
 *   92  u32    ref of the advisory index
 *   96  u32    ref of the heap
 *   100 u32    ref of Str: OSV source as host:port
 *   104 u32    ref of Str: OSV source URL without userinfo, query, fragment
 *   108 u32    format 2: ref of the Details section, 0 = none (format 1: reserved, 0)
 *   112 u8[16] reserved, 0
 *
 * Package index: P entries of 16 bytes, sorted by the raw UTF-8 bytes of the
 * name (unsigned byte order, shorter prefix first), for binary search:
 *   u32 ref of the name's UTF-8 bytes, u32 name byte length,
 *   u32 ref of the package's entries, u32 entry count E
 * Names are stored as looked up: npm names as they are, PyPI names PEP 503
 * normalised.
 *
 * Advisory index: A entries of u32, the ref of each advisory record.
 *
 * Heap (everything below is somewhere in it):
 *   Str            u32 byte length, UTF-8 bytes
 *   Entries        E x (u32 advisory number < A, u32 ref of a Match)
 *   Match          what one advisory says about one package, the union of
 *                  all its `affected` entries for that package:
 *                    u32 range count R, then R x Range,
 *                    u32 version count V, then V x u32 ref of a Key,
 *                    sorted by key bytes (binary search)
 *   Range          u32 event count N, then N x Event, sorted by version
 *                  (stable; ties keep record order)
 *   Event          u8 kind (EVENT_*), u8 flags (FLAG_*), u16 key length K,
 *                  K key bytes (version-key.ts); K = 0 with FLAG_UNBOUNDED
 *   Key            u16 key length, key bytes
 *   Advisory       f64 highest EPSS over its CVEs (NaN: none), Str id,
 *                  u32 CVE count C, C x Str CVE id
 *
 * Details section (format 2, optional: what `npm audit`'s bulk answer needs
 * beyond the lookup, engine/advisory/artifact/advisory-details.ts):
 *   u32 advisory count (= A), A x u32 ref of an AdvisoryDetails,
 *   u32 package count (= P), P x u32 ref of a RangeTexts
 *   AdvisoryDetails  Str title, Str url, u8 severity (SEVERITY_CODES),
 *                    u8[3] reserved 0, f64 CVSS v3 base score (NaN: none),
 *                    Str CVSS vector (empty: none), u32 CWE count W, W x Str
 *   RangeTexts       E x u32 ref of Str, parallel to the package's entries:
 *                    the affected versions of that advisory for that package
 *                    as a semver range (`<4.17.21`, `>=1.0.0 <1.2.3 || 2.0.0`)
 *
 * A format 1 artifact has no details section; readers open both.
 */

export const MAGIC = Uint8Array.of(0x4f, 0x53, 0x56, 0x41, 0x44, 0x42, 0x0d, 0x0a) // "OSVADB\r\n"
/** What the writer writes; the reader opens every version in READABLE_FORMAT_VERSIONS. */
export const FORMAT_VERSION = 2
export const READABLE_FORMAT_VERSIONS: readonly number[] = [1, 2]
export const HEADER_SIZE = 128
/** Bytes [CHECKSUM_FROM, total) are covered by the SHA-256 at offset 16. */
export const CHECKSUM_FROM = 48

export const H_FORMAT_VERSION = 8
export const H_TOTAL_LENGTH = 12
export const H_CHECKSUM = 16
export const H_ECOSYSTEM = 48
export const H_EPSS_STATUS = 49
export const H_ROW_COUNT = 52
export const H_COMPILED_AT = 56
export const H_NEWEST_ADVISORY_AT = 64
export const H_EPSS_SCORE_DATE = 72
export const H_PACKAGE_COUNT = 80
export const H_ADVISORY_COUNT = 84
export const H_PACKAGE_INDEX = 88
export const H_ADVISORY_INDEX = 92
export const H_HEAP = 96
export const H_OSV_SOURCE = 100
export const H_OSV_SOURCE_URL = 104
/** Format 2: ref of the details section, 0 when absent. */
export const H_DETAILS = 108

export const PACKAGE_ENTRY_SIZE = 16
export const ENTRY_SIZE = 8

export const EVENT_INTRODUCED = 1
export const EVENT_FIXED = 2
export const EVENT_LAST_AFFECTED = 3
export const EVENT_LIMIT = 4

/** `introduced: "0"` (below every version) or `limit: "*"` (above every version); no key. */
export const FLAG_UNBOUNDED = 0x01
/** A `fixed` event with an `introduced` event before it: a remediation bound. */
export const FLAG_REMEDIATES = 0x02

export const ECOSYSTEM_CODES = { js: 0, py: 1 } as const
export const EPSS_STATUS_CODES = { none: 0, available: 1, unavailable: 2 } as const

/** Severity as npm's bulk advisory answer spells it; 0 = not recorded. */
export const SEVERITY_CODES = { low: 1, moderate: 2, high: 3, critical: 4 } as const
