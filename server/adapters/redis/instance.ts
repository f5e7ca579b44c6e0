// What an instance with REDIS_URL uses of Redis. main.ts imports it only then: Redis's client
// costs a process about 9 MiB resident, which an instance without Redis need not carry.
export { waitForRedis } from './client'
export { connectRedis } from './connect-redis'
export { RedisAdmissionStore } from './admission-store'
export { RedisChangeBus } from './change-bus'
export { RedisLoginLimiter } from './login-limiter'
export { redisPassLease } from './pass-lease'
