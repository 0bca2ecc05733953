/** The npm-notice line (issue 32 item 2, engine/packument/withheld-notice.ts): bounded, printable ASCII only. */
import t from 'tap'
import { NOTICE_MAX_CHARS, withheldNotice } from '../../engine/packument/withheld-notice.js'

t.test('one line naming the count, the newest version, its reason and the why route', async (t) => {
  t.equal(
    withheldNotice({ packageName: 'debug', withheld: 1, newest: '4.4.3', reason: 'debug@4.4.3 is refused by DenyIdentity (rule 1)', baseUrl: 'http://127.0.0.1:4873/' }),
    'debug: 1 version withheld by policy; newest 4.4.3: debug@4.4.3 is refused by DenyIdentity (rule 1); why (any version): http://127.0.0.1:4873/js/-/why/debug/4.4.3',
  )
  t.match(withheldNotice({ packageName: '@acme/x', withheld: 3, newest: '1.0.0', reason: 'r', baseUrl: 'http://h' }), /^@acme\/x: 3 versions withheld .*http:\/\/h\/js\/-\/why\/@acme%2fx\/1\.0\.0$/)
})

t.test('bounded, and only printable ASCII', async (t) => {
  const long = withheldNotice({ packageName: 'debug', withheld: 2, newest: '1.0.0', reason: 'x'.repeat(5000), baseUrl: 'http://h' })
  t.ok(long.length <= NOTICE_MAX_CHARS)
  t.match(long, /x\.\.\.; why \(any version\): http:\/\/h\/js\/-\/why\/debug\/1\.0\.0$/, 'the reason gives way, the route stays')
  const unsafe = withheldNotice({ packageName: 'debug', withheld: 2, newest: '1.0.0', reason: 'a\r\nSet-Cookie: x\u0000\u00e9\u202e', baseUrl: 'http://h' })
  t.notMatch(unsafe, /[^\x20-\x7e]/)
  t.match(unsafe, /a\?\?Set-Cookie: x\?\?\?/)
})
