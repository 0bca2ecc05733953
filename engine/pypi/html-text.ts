/**
 * HTML text in and out for the PEP 503 pages: character references decoded
 * on reading (attribute values such as `data-requires-python="&gt;=3.8"`
 * arrive encoded), and text and attribute values escaped on writing.
 */

/** The references a Simple page uses; HTML also defines the upper-case AMP, LT, GT and QUOT. */
const NAMED: Readonly<Record<string, string>> = {
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0', AMP: '&', LT: '<', GT: '>', QUOT: '"',
}
const REFERENCE = /&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z]{2,8});?/g

/** Decodes numeric references and the named ones a Simple page uses; other text is left as written. */
export function decodeHtmlText(text: string): string {
  if (!text.includes('&')) return text
  return text.replace(REFERENCE, (whole, ref: string) => {
    if (ref.startsWith('#')) {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10)
      // The HTML parser's replacement for NUL, surrogates and out-of-range code points.
      if (code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return '\ufffd'
      return String.fromCodePoint(code)
    }
    return Object.hasOwn(NAMED, ref) ? NAMED[ref] as string : whole
  })
}

const ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
const TO_ESCAPE = /[&<>"']/g

/** Escapes text for an element's content or a double- or single-quoted attribute value. */
export function escapeHtml(text: string): string {
  return TO_ESCAPE.test(text) ? text.replace(TO_ESCAPE, (c) => ESCAPES[c] as string) : text
}
