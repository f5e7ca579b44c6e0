import { parseArgs } from 'node:util'
import type { DemoTenant } from '../adapters/postgres/demo-tenant'
import { loadConfig, type Config } from '../config'
import { callControlSocket, ControlSocketError } from '../control-socket'
import { formatEgp, parseEgp } from '../core/money'
import { CliError, UsageError } from './cli-errors'
import { withDatabase } from './with-database'

export const demoUsage = `Usage: bun server/cli.ts demo [--json] [--balance-egp N] [--rpm N] [--wait-ms N]

Creates a demo organization with a verified owner, a project and an API key, and prints them once.
  --json            print one JSON object: base_url, api_key, organization_id, project_id, email, password
  --balance-egp N   starting credit in EGP, up to 6 decimals; 0 is allowed (default 1000000)
  --rpm N           requests-per-minute limit of the key, a positive integer (default: the plan's)
  --wait-ms N       how long to wait for a starting gateway on DATA_DIR to answer (default 10000)

Uses DATABASE_URL when set; otherwise the embedded database in DATA_DIR, through the gateway when one runs there.`

interface DemoArgs {
  json: boolean
  balanceMicros: bigint | null
  rpmLimit: number | null
  waitMs: number
}

const maxInt4 = 2_147_483_647

export async function runDemoCommand(args: string[], env: Record<string, string | undefined>): Promise<void> {
  const demoArgs = parseDemoArgs(args)
  const config = loadConfig(env)
  const { demo, gatewayBaseUrl } = await withDatabase(
    config,
    {
      async viaGateway(dataDir) {
        const reply = await callControlSocket(dataDir, { command: 'demo', balanceMicros: demoArgs.balanceMicros, rpmLimit: demoArgs.rpmLimit }).catch((error) => {
          throw error instanceof ControlSocketError ? new CliError(`The gateway could not create the demo tenant: ${error.message}`) : error
        })
        return reply && { demo: reply.demo, gatewayBaseUrl: reply.baseUrl }
      },
      async direct(database) {
        const options = { rpmLimit: demoArgs.rpmLimit, ...(demoArgs.balanceMicros === null ? {} : { balanceMicros: demoArgs.balanceMicros }) }
        return { demo: await database.createDemoTenant(options), gatewayBaseUrl: null }
      },
    },
    demoArgs.waitMs,
  )
  // An explicit PUBLIC_BASE_URL wins; then the address the running gateway reports; then HOST:PORT.
  const baseUrl = config.publicBaseUrl ?? gatewayBaseUrl ?? hostBaseUrl(config)
  console.log(demoArgs.json ? JSON.stringify(demoCredentials(demo, baseUrl)) : formatDemoSummary(demo, baseUrl))
}

function parseDemoArgs(args: string[]): DemoArgs {
  let values
  try {
    ;({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: { json: { type: 'boolean' }, 'balance-egp': { type: 'string' }, rpm: { type: 'string' }, 'wait-ms': { type: 'string' } },
    }))
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
  return {
    json: values.json ?? false,
    balanceMicros: values['balance-egp'] === undefined ? null : parseBalance(values['balance-egp']),
    rpmLimit: values.rpm === undefined ? null : parseWholeNumber('--rpm', values.rpm, 1),
    waitMs: values['wait-ms'] === undefined ? 10_000 : parseWholeNumber('--wait-ms', values['wait-ms'], 0),
  }
}

function parseBalance(value: string): bigint {
  try {
    return parseEgp(value)
  } catch {
    throw new UsageError(`--balance-egp takes an amount in EGP with at most 6 decimals, like 250 or 0.5 or 0; got ${JSON.stringify(value)}`)
  }
}

function parseWholeNumber(option: string, value: string, minimum: number): number {
  const parsed = /^\d+$/.test(value) ? Number(value) : Number.NaN
  if (!(parsed >= minimum && parsed <= maxInt4)) {
    throw new UsageError(`${option} takes a whole number from ${minimum} to ${maxInt4}; got ${JSON.stringify(value)}`)
  }
  return parsed
}

function hostBaseUrl(config: Config): string {
  const host = config.host.includes(':') ? `[${config.host}]` : config.host
  return `http://${host}:${config.port}/v1`
}

/** The `--json` output: one object with what a client needs, in snake_case. */
export function demoCredentials(demo: DemoTenant, baseUrl: string) {
  return {
    base_url: baseUrl,
    api_key: demo.apiKey,
    organization_id: demo.organizationId,
    project_id: demo.projectId,
    email: demo.email,
    password: demo.password,
  }
}

/** A readable summary of a new demo tenant; its secrets are shown this once. */
export function formatDemoSummary(demo: DemoTenant, baseUrl: string): string {
  return [
    `Demo tenant created with ${formatEgp(demo.balanceMicros)} EGP of credit. The key and password are shown only now.`,
    '',
    `  base URL       ${baseUrl}`,
    `  API key        ${demo.apiKey}`,
    `  organization   ${demo.organizationId}`,
    `  project        ${demo.projectId}`,
    `  login          ${demo.email}`,
    `  password       ${demo.password}`,
    '',
    `  export OPENAI_BASE_URL=${baseUrl}`,
    `  export OPENAI_API_KEY=${demo.apiKey}`,
  ].join('\n')
}
