// What does routing cost? Two scenarios through one gateway to the fake upstream, in turns: (1) a model
// with one deployment, (2) a model with four deployments (the same upstream behind each), so that the
// difference is the router's choice among four. Writes bench/RESULTS-routing.md.
//
//   bun bench/routing.ts [--duration 10] [--rounds 3] [--connections 50] [--postgres [URL]] [--no-write]

import { join } from 'node:path'
import { comparisonReport, runComparison } from './compare'
import { chatBody } from './run'

await runComparison('RESULTS-routing.md', async (context) => {
  const gateway = await context.launchGateway('gateway', 1_000)
  const oneDeployment = join(context.workDir, 'body-one.json')
  const fourDeployments = join(context.workDir, 'body-four.json')
  await Bun.write(oneDeployment, chatBody('bench/upstream-echo'))
  await Bun.write(fourDeployments, chatBody('bench/upstream-echo-x4'))
  const outcomes = await context.measureInTurns([
    { gateway, bodyFile: oneDeployment, keysFile: gateway.keysFile, label: 'model with one deployment' },
    { gateway, bodyFile: fourDeployments, keysFile: gateway.keysFile, label: 'model with four deployments' },
  ])
  const command = `bun bench/routing.ts${context.args.length ? ` ${context.args.join(' ')}` : ''}`
  const notes = ['Non-streamed chat through the gateway to the fake upstream (16 output tokens); the four deployments all point at it, weight 1 each.']
  return { markdown: comparisonReport(context, 'Routing over four deployments versus one', command, notes, outcomes), outcomes }
})
