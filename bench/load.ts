// A load tester for any OpenAI-compatible endpoint (nilegate, vLLM, another gateway): chat
// completions, plain or streamed, or embeddings, in a closed loop at --concurrency or an open one at
// --rps. A progress line a second on stderr, then a table of req/s, latency and time-to-first-token
// percentiles, output tokens/s and errors by status and code; --json for the same as JSON.
//
//   bun bench/load.ts --base-url http://127.0.0.1:8080/v1 --api-key sk-... --model MODEL \
//                     --concurrency 10 --duration 10 [--stream] [--rps R] [--keys FILE] [--json FILE|-]
//
// `bun bench/load.ts --help` lists every option. bench/run.ts runs it (with --json) when wrk is missing.

import { loadUsage, parseLoadOptions, UsageError, type LoadOptions } from './load-options'
import { runLoad } from './load-runner'
import { createProgressLine, renderLoadTable } from './load-table'

async function main(): Promise<number> {
  let options: LoadOptions
  try {
    options = await parseLoadOptions(Bun.argv.slice(2))
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    if (!error.message) {
      console.log(loadUsage)
      return 0
    }
    console.error(`${error.message} (bun bench/load.ts --help lists the options)`)
    return 2
  }
  const progressLine = createProgressLine()
  // On a terminal the line is rewritten in place; in a log, one line a second.
  const showProgress = options.isQuiet
    ? undefined
    : (stats: Parameters<typeof progressLine>[0], elapsedMs: number) => {
        const line = progressLine(stats, elapsedMs)
        process.stderr.write(process.stderr.isTTY ? `\r\x1b[K${line}` : `${line}\n`)
      }
  const report = await runLoad(options, showProgress)
  if (showProgress && process.stderr.isTTY) process.stderr.write('\n')

  const table = renderLoadTable(report)
  const json = JSON.stringify(report, null, 2)
  if (options.jsonPath === '-') {
    console.error(table)
    console.log(json)
  } else {
    console.log(table)
    if (options.jsonPath) await Bun.write(options.jsonPath, json + '\n')
  }
  return 0
}

// Exit at once: a hard-stopped run leaves requests to a hung server behind, which must not hold the process.
process.exit(await main())
