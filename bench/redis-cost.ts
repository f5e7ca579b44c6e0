// What the Redis admission store costs Redis a request, without a gateway: admissions and then
// their settlements through `RedisAdmissionStore`, in runs of `--per-run` (each run shares one
// script call, as the requests of one turn of the event loop do), over `--keys` API keys of one
// organization, with ids as long as the gateway's. Redis's own time comes from INFO commandstats:
// EVALSHA's microseconds a request for admit.lua and for settle.lua, and the commands the scripts
// ran (the rest of a script's time is Lua's own work); redis-server's CPU from /proc, when it runs
// on this machine, counts the round trips too (less INFO's own time). The first third of each round warms up and is not
// counted. Repeats within a few percent where the whole bench moves by a fifth: the measure for a
// change to the scripts. It reads counters of the whole server: run it on a Redis nothing else uses.
//
//   bun bench/redis-cost.ts [--redis redis://127.0.0.1:6379/10] [--rounds 3] [--runs 300] [--per-run 20] [--keys 1000]
//
// It imports the gateway's Redis store (the only bench file that does): the store is what it measures.

import { argValue, integerArg } from './arg-value'
import { percentile } from './percentile'
import { processesNamed, totalCpuSeconds } from './process-group'
import { RedisAdmissionStore } from '../server/adapters/redis/admission-store'
import { createRedisClient, waitForRedis } from '../server/adapters/redis/client'
import { billingMonth, type AdmitRequest } from '../server/core/admission'

const args = Bun.argv.slice(2)
const redisUrl = argValue(args, ['--redis']) ?? 'redis://127.0.0.1:6379/10'
const rounds = integerArg(args, 'rounds', 3)
const runs = integerArg(args, 'runs', 300)
const perRun = integerArg(args, 'per-run', 20)
const keyCount = integerArg(args, 'keys', 1_000)
const timeZone = 'Africa/Cairo'

/** An id of the gateway's shape and length: a prefix and 24 hexadecimal digits. */
function id(prefix: string): string {
  return `${prefix}_${crypto.randomUUID().replaceAll('-', '').slice(0, 24)}`
}

interface CommandStat {
  calls: number
  usec: number
}

function commandStats(info: string): Map<string, CommandStat> {
  const stats = new Map<string, CommandStat>()
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) stats.set(match[1]!, { calls: Number(match[2]), usec: Number(match[3]) })
  return stats
}

/** What each command added between two INFO commandstats readings. */
function added(before: Map<string, CommandStat>, after: Map<string, CommandStat>): Map<string, CommandStat> {
  const delta = new Map<string, CommandStat>()
  for (const [name, stat] of after) {
    const was = before.get(name) ?? { calls: 0, usec: 0 }
    if (stat.calls > was.calls) delta.set(name, { calls: stat.calls - was.calls, usec: stat.usec - was.usec })
  }
  return delta
}

function sum(into: Map<string, CommandStat>, from: Map<string, CommandStat>): void {
  for (const [name, stat] of from) {
    const total = into.get(name) ?? { calls: 0, usec: 0 }
    into.set(name, { calls: total.calls + stat.calls, usec: total.usec + stat.usec })
  }
}

function median(values: number[]): number {
  return percentile([...values].sort((a, b) => a - b), 50)
}

interface RoundResult {
  requests: number
  admit: Map<string, CommandStat>
  settle: Map<string, CommandStat>
  /** redis-server's CPU over the counted runs, less the time INFO's own calls took; null when it does not run here. */
  cpuSeconds: number | null
}

const client = createRedisClient(redisUrl)
await waitForRedis(client, 5_000)
const redisPids = await processesNamed('redis-server')
const keyPrefix = `bench-redis-cost-${crypto.randomUUID().slice(0, 8)}:`
const store = new RedisAdmissionStore(client, { keyPrefix })
await store.loadScripts()
const stats = async () => commandStats(await client.info('commandstats'))

async function round(): Promise<RoundResult> {
  const orgId = id('org')
  const projectId = id('proj')
  const keys = Array.from({ length: keyCount }, () => id('key'))
  const month = billingMonth(Date.now(), timeZone)
  await store.load(orgId, { month, balanceMicros: 10n ** 15n, keySpend: new Map(), projectSpend: new Map() })
  const result: RoundResult = { requests: 0, admit: new Map(), settle: new Map(), cpuSeconds: null }
  const warmUp = Math.floor(runs / 3)
  let next = 0
  let cpuBefore = 0
  let infoUsec = 0
  for (let run = 0; run < runs; run++) {
    if (run === warmUp) cpuBefore = await totalCpuSeconds(redisPids)
    const requests: AdmitRequest[] = Array.from({ length: perRun }, () => ({
      requestId: id('req'),
      orgId,
      keyId: keys[next++ % keys.length]!,
      projectId,
      rpmLimit: 1_000_000,
      worstCaseMicros: 5_000n,
      keyCapMicros: 10n ** 12n,
      projectCapMicros: 10n ** 13n,
      nowMs: Date.now(),
      reservationTtlMs: 600_000,
      timeZone,
    }))
    const beforeAdmit = await stats()
    const admitted = await Promise.all(requests.map((request) => store.admit(request)))
    const beforeSettle = await stats()
    const settled = await Promise.all(
      requests.map((request, index) => {
        const admission = admitted[index]!
        if (!admission.admitted) throw new Error(`${request.requestId} was refused: ${admission.reason}`)
        return store.settle({ requestId: request.requestId, orgId, keyId: request.keyId, projectId, month: admission.month, costMicros: 1_234n, nowMs: Date.now() })
      }),
    )
    const afterSettle = await stats()
    const unsettled = settled.find((outcome) => outcome.outcome !== 'settled')
    if (unsettled) throw new Error(`a settlement answered ${unsettled.outcome}`)
    if (run < warmUp) continue
    infoUsec += (afterSettle.get('info')?.usec ?? 0) - (beforeAdmit.get('info')?.usec ?? 0)
    result.requests += perRun
    sum(result.admit, added(beforeAdmit, beforeSettle))
    sum(result.settle, added(beforeSettle, afterSettle))
  }
  if (redisPids.length > 0) result.cpuSeconds = (await totalCpuSeconds(redisPids)) - cpuBefore - infoUsec / 1e6
  return result
}

/** Microseconds a request: a script's time, and that of the commands it ran (all but INFO). */
function perRequest(stats: Map<string, CommandStat>, requests: number) {
  const script = (stats.get('evalsha')?.usec ?? 0) / requests
  let commands = 0
  const calls: string[] = []
  for (const [name, stat] of stats) {
    if (name === 'evalsha' || name === 'info' || name === 'ping') continue
    commands += stat.usec / requests
    calls.push(`${name} ${(stat.calls / requests).toFixed(2)} (${(stat.usec / requests).toFixed(2)} us)`)
  }
  return { script, commands, calls }
}

try {
  const results: RoundResult[] = []
  for (let index = 0; index < rounds; index++) {
    const result = await round()
    results.push(result)
    const admit = perRequest(result.admit, result.requests)
    const settle = perRequest(result.settle, result.requests)
    const cpu = result.cpuSeconds === null ? '' : `; redis-server CPU ${((result.cpuSeconds * 1e6) / result.requests).toFixed(1)} us`
    console.error(`round ${index + 1}: admit ${admit.script.toFixed(2)} us, settle ${settle.script.toFixed(2)} us a request${cpu}`)
  }
  const admit = results.map((result) => perRequest(result.admit, result.requests))
  const settle = results.map((result) => perRequest(result.settle, result.requests))
  const last = results.at(-1)!
  console.log(`Redis admission store, ${rounds} rounds of ${runs} runs of ${perRun} (the first third of each not counted), ${keyCount} keys; medians, us a request:`)
  console.log(`  admit.lua  ${median(admit.map((a) => a.script)).toFixed(2)} (the commands it ran ${median(admit.map((a) => a.commands)).toFixed(2)}, Lua the rest)`)
  console.log(`  settle.lua ${median(settle.map((s) => s.script)).toFixed(2)} (the commands it ran ${median(settle.map((s) => s.commands)).toFixed(2)}, Lua the rest)`)
  console.log(`  both       ${median(results.map((_, i) => admit[i]!.script + settle[i]!.script)).toFixed(2)}`)
  if (results.every((result) => result.cpuSeconds !== null)) {
    console.log(`  redis-server CPU, round trips included: ${median(results.map((result) => (result.cpuSeconds! * 1e6) / result.requests)).toFixed(1)}`)
  }
  console.log(`Commands a request in the last round, calls (time): admit ${perRequest(last.admit, last.requests).calls.join(', ')}; settle ${perRequest(last.settle, last.requests).calls.join(', ')}`)
} finally {
  for await (const found of client.scanIterator({ MATCH: `${keyPrefix}*`, COUNT: 1_000 })) {
    const names = Array.isArray(found) ? found : [found]
    if (names.length > 0) await client.del(names)
  }
  client.destroy()
}
