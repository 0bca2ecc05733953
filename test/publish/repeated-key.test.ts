import t from 'tap'
import { repeatedKey } from '../../engine/publish/repeated-key.js'

const of = (text: string): string | undefined => {
  JSON.parse(text) // the scan's precondition
  return repeatedKey(Buffer.from(text))
}

t.test('distinct keys, whatever the strings hold', async (t) => {
  t.equal(of('{}'), undefined)
  t.equal(of('[]'), undefined)
  t.equal(of('"a"'), undefined)
  t.equal(of('{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}'), undefined, 'the same key in different objects')
  t.equal(of('{"a":"\\"a\\":1,","b":"\\\\","c":"}{,\\"a\\""}'), undefined, 'quotes, backslashes and structure inside values')
  t.equal(of('{"a\\"b":1,"a":2,"a\\\\":3}'), undefined, 'escaped quotes and backslashes inside keys')
  t.equal(of('{ "a" : [ 1 , { "b" : null } ] , "b" : true }'), undefined, 'whitespace')
})

t.test('a repeated key, named by its path', async (t) => {
  t.equal(of('{"a":1,"a":2}'), 'a')
  t.equal(of('{"a":1,"\\u0061":2}'), 'a', 'compared decoded')
  t.equal(of('{"é":1,"\\u00e9":2}'), 'é', 'UTF-8 and its escape')
  t.equal(of('{"v":{"1.0.0":{"dist":{"t":1,"t":2}}}}'), 'v.1.0.0.dist.t')
  t.equal(of('{"x":[{"a":"\\\\","a":1}]}'), 'x.[].a', 'inside an array, after a value ending in a backslash')
  t.equal(of('{"a":{},"b":[],"a":[]}'), 'a', 'after empty containers')
})
