// Does the number of API keys in the database change inference throughput? Three scenarios on the
// simulator model, in turns: (1) a gateway with 1,000 keys in its database, load over them; a second
// gateway whose database holds 10,000 keys (9,000 created through the management API), (2) load over
// 1,000 of them and (3) over all 10,000 (each must be warm in the key cache). Writes bench/RESULTS-keys.md.
//
//   bun bench/keys.ts [--keys 10000] [--duration 10] [--rounds 3] [--connections 50] [--postgres [URL]] [--no-write]

import { join } from 'node:path'
import { integerArg } from './arg-value'
import { comparisonReport, runComparison } from './compare'
import { chatBody } from './run'

const baselineKeys = 1_000

await runComparison('RESULTS-keys.md', async (context) => {
  const totalKeys = integerArg(context.args, 'keys', 10_000)
  const few = await context.launchGateway('few', baselineKeys)
  const many = await context.launchGateway('many', baselineKeys)
  console.error(`creating ${totalKeys - baselineKeys} more keys through the management API ...`)
  const startedAt = performance.now()
  const created = await many.createKeys(totalKeys - baselineKeys)
  const creationS = (performance.now() - startedAt) / 1000
  const allKeysFile = join(context.workDir, 'all-keys.txt')
  await Bun.write(allKeysFile, [...many.keys, ...created].join('\n') + '\n')
  const bodyFile = join(context.workDir, 'body.json')
  await Bun.write(bodyFile, chatBody('bench/simulated'))

  const outcomes = await context.measureInTurns([
    { gateway: few, bodyFile, keysFile: few.keysFile, label: `${baselineKeys} keys in the database, load over them` },
    { gateway: many, bodyFile, keysFile: many.keysFile, label: `${totalKeys} keys in the database, load over ${baselineKeys} of them` },
    { gateway: many, bodyFile, keysFile: allKeysFile, label: `${totalKeys} keys in the database, load over all ${totalKeys}` },
  ])
  const notes = [
    'Model `bench/simulated` (16 output tokens).',
    `${totalKeys - baselineKeys} keys were created through \`POST /v1/organization/projects/{id}/api_keys\` in ${creationS.toFixed(1)} s.`,
  ]
  const command = `bun bench/keys.ts${context.args.length ? ` ${context.args.join(' ')}` : ''}`
  return { markdown: comparisonReport(context, 'API keys in the database versus throughput', command, notes, outcomes), outcomes }
})
