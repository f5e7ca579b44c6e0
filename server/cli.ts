import { UsageError } from './cli/cli-errors'
import { demoUsage, runDemoCommand } from './cli/demo-command'
import { ledgerUsage, runLedgerCommand } from './cli/ledger-command'
import { operatorUsage, runOperatorCommand } from './cli/operator-command'
import { reconcileUsage, runReconcileCommand } from './cli/reconcile-command'

/** nilegate's command line: `bun server/cli.ts <command> [options]`. */

interface Command {
  summary: string
  usage: string
  run(args: string[], env: Record<string, string | undefined>): Promise<void>
}

const commands: Record<string, Command> = {
  demo: { summary: 'create a demo organization with credit and an API key', usage: demoUsage, run: runDemoCommand },
  reconcile: { summary: 'repair the Redis admission counters from the ledger', usage: reconcileUsage, run: runReconcileCommand },
  operator: { summary: 'grant or revoke platform-operator rights (/v1/admin/*) by e-mail', usage: operatorUsage, run: runOperatorCommand },
  ledger: { summary: "list the usage ledger's partitions, or remove raw usage rows of old months", usage: ledgerUsage, run: runLedgerCommand },
}

const overview = `Usage: bun server/cli.ts <command> [options]

Commands:
${Object.entries(commands)
  .map(([name, command]) => `  ${name.padEnd(10)}${command.summary}`)
  .join('\n')}

Run \`bun server/cli.ts <command> --help\` for a command's options.`

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv
  if (name === '--help' || name === '-h' || name === 'help') {
    console.log(overview)
    return 0
  }
  if (name === undefined) {
    console.error(overview)
    return 2
  }
  const command = commands[name]
  try {
    if (!command) throw new UsageError(`unknown command ${JSON.stringify(name)}`)
    if (args.includes('--help') || args.includes('-h')) {
      console.log(command.usage)
      return 0
    }
    await command.run(args, Bun.env)
    return 0
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`error: ${error.message}\nRun \`bun server/cli.ts ${command ? `${name} ` : ''}--help\` for usage.`)
      return 2
    }
    console.error(`error: ${error instanceof Error ? error.message : String(error)}`)
    return 1
  }
}

process.exit(await main(Bun.argv.slice(2)))
