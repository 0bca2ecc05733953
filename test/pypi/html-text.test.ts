import t from 'tap'

import { decodeHtmlText, escapeHtml } from '../../engine/pypi/html-text.js'

t.test('character references', async (t) => {
  t.equal(decodeHtmlText('&gt;=3.6, &lt;4 &amp; &quot;x&quot; &apos;y&apos;'), '>=3.6, <4 & "x" \'y\'')
  t.equal(decodeHtmlText('&#62;=3&#x2C;&#X3c;4'), '>=3,<4')
  t.equal(decodeHtmlText('&gt=3'), '>=3', 'legacy reference without semicolon')
  t.equal(decodeHtmlText('a&#0;b&#xD800;c&#x110000;d'), 'a\ufffdb\ufffdc\ufffdd', 'NUL, surrogate, out of range')
  t.equal(decodeHtmlText('&GT;&LT;&AMP;&QUOT;'), '><&"', 'the upper-case forms HTML defines')
  t.equal(decodeHtmlText('&Gt; &copy; &unknown; &constructor;'), '&Gt; &copy; &unknown; &constructor;', 'other named references left as written')
  t.equal(decodeHtmlText('no references'), 'no references')
})

t.test('escaping round-trips', async (t) => {
  const nasty = `<a href="x">'&amp;'</a>`
  t.equal(escapeHtml(nasty), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;amp;&#39;&lt;/a&gt;')
  t.equal(decodeHtmlText(escapeHtml(nasty)), nasty)
  t.equal(escapeHtml('plain'), 'plain')
})
