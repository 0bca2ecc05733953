/** The Redis peer lives with the bench peers (bench/ never imports from test/), so the benches' fleet can share it. */
export * from '../../bench/peers/redis.js'
