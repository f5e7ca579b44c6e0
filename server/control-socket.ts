import { chmodSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { DemoTenant, DemoTenantOptions } from './adapters/postgres/demo-tenant'
import type { LedgerStatus, RetentionOptions, RetentionReport } from './adapters/postgres/ledger-retention'
import type { OperatorChange } from './core/governance/operator'

/**
 * A small JSON API on a unix socket in the data directory, through which the CLI asks a running
 * gateway to act on the embedded database that only the gateway may open.
 */

/** What the gateway does on behalf of the CLI. */
export interface ControlHandlers {
  /** The gateway's public base URL, reported to the CLI with each answer. */
  baseUrl?: string
  createDemo(options: DemoTenantOptions): Promise<DemoTenant>
  setOperator(email: string, grant: boolean): Promise<OperatorChange>
  ledgerStatus(): Promise<LedgerStatus>
  retainUsage(options: RetentionOptions): Promise<RetentionReport>
}

export interface ControlSocket {
  readonly path: string
  /** Stops listening and removes the socket file. */
  stop(): Promise<void>
}

/** A request the CLI sends; one variant per command. */
export type ControlRequest =
  | { command: 'demo'; balanceMicros: bigint | null; rpmLimit: number | null }
  | { command: 'operator'; email: string; grant: boolean }
  | ({ command: 'ledger' } & LedgerRequest)

/** What the `ledger` command asks of the gateway. */
export type LedgerRequest = { action: 'status' } | ({ action: 'retain' } & RetentionOptions)

/** The answer to a ControlRequest. */
export interface ControlReply {
  baseUrl: string | null
  demo: DemoTenant
}

/** The gateway answered with an error. */
export class ControlSocketError extends Error {
  override name = 'ControlSocketError'
}

const socketFileName = 'control.sock'
const defaultCallTimeoutMs = 30_000

export function controlSocketPath(dataDir: string): string {
  return join(resolve(dataDir), socketFileName)
}

/**
 * Listens on `<dataDir>/control.sock`, readable and writable by the owner only. Call it while
 * holding the data-dir lock: a socket file left by a crashed gateway is replaced.
 */
export function startControlSocket(dataDir: string, handlers: ControlHandlers): ControlSocket {
  const path = controlSocketPath(dataDir)
  rmSync(path, { force: true })
  // The umask makes the socket private from the moment it exists; the chmod makes sure of it.
  const previousUmask = process.umask(0o177)
  let server: ReturnType<typeof Bun.serve>
  try {
    server = Bun.serve({ unix: path, fetch: (request) => answer(request, handlers) })
  } finally {
    process.umask(previousUmask)
  }
  chmodSync(path, 0o600)
  return {
    path,
    async stop() {
      await server.stop(true)
      rmSync(path, { force: true })
    },
  }
}

/**
 * Sends `request` to the gateway serving `dataDir` and returns its JSON answer. Resolves null when
 * no gateway listens there; throws ControlSocketError when one answers with an error or not in time.
 */
async function send(dataDir: string, request: ControlRequest, timeoutMs: number): Promise<Record<string, unknown> | null> {
  let response: Response
  try {
    response = await fetch('http://localhost/', {
      unix: controlSocketPath(dataDir),
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request, (_key, value) => (typeof value === 'bigint' ? value.toString() : value)),
      signal: AbortSignal.timeout(timeoutMs),
    })
  } catch (error) {
    const code = (error as { code?: string }).code
    // No socket file, or one left by a gateway that is gone.
    if (code === 'ENOENT' || code === 'ECONNREFUSED') return null
    if ((error as Error).name === 'TimeoutError') throw new ControlSocketError(`the gateway did not answer within ${timeoutMs} ms`)
    throw error
  }
  const body = (await response.json()) as Record<string, unknown>
  if (!response.ok) throw new ControlSocketError(typeof body.error === 'string' ? body.error : `the gateway answered ${response.status}`)
  return body
}

/** Asks the gateway serving `dataDir` for a demo tenant; null when no gateway listens there. */
export async function callControlSocket(dataDir: string, request: Extract<ControlRequest, { command: 'demo' }>, timeoutMs = defaultCallTimeoutMs): Promise<ControlReply | null> {
  const body = (await send(dataDir, request, timeoutMs)) as { baseUrl: string | null; demo: Omit<DemoTenant, 'balanceMicros'> & { balanceMicros: string } } | null
  return body && { baseUrl: body.baseUrl, demo: { ...body.demo, balanceMicros: BigInt(body.demo.balanceMicros) } }
}

/** Asks the gateway serving `dataDir` to grant or revoke the operator flag; `{ change }`, or null when no gateway listens there. */
export async function callOperatorControl(dataDir: string, email: string, grant: boolean, timeoutMs = defaultCallTimeoutMs): Promise<{ change: OperatorChange } | null> {
  const body = await send(dataDir, { command: 'operator', email, grant }, timeoutMs)
  return body && { change: body.change as OperatorChange }
}

/** Asks the gateway serving `dataDir` for the ledger's status or a retention run; null when no gateway listens there. */
export async function callLedgerControl(dataDir: string, request: LedgerRequest, timeoutMs = 600_000): Promise<LedgerStatus | RetentionReport | null> {
  return (await send(dataDir, { command: 'ledger', ...request }, timeoutMs)) as LedgerStatus | RetentionReport | null
}

async function answer(request: Request, handlers: ControlHandlers): Promise<Response> {
  if (request.method !== 'POST') return Response.json({ error: 'send a POST with a JSON command' }, { status: 405 })
  const body = ((await request.json().catch(() => null)) ?? {}) as Record<string, unknown>
  switch (body.command) {
    case 'demo': {
      let options: DemoTenantOptions
      try {
        options = parseDemoOptions(body)
      } catch (error) {
        return Response.json({ error: (error as Error).message }, { status: 400 })
      }
      return run(async () => {
        const demo = await handlers.createDemo(options)
        return { baseUrl: handlers.baseUrl ?? null, demo: { ...demo, balanceMicros: demo.balanceMicros.toString() } }
      })
    }
    case 'operator': {
      const { email, grant } = body
      if (typeof email !== 'string' || typeof grant !== 'boolean') return Response.json({ error: 'operator takes an email string and a grant boolean' }, { status: 400 })
      return run(async () => ({ change: await handlers.setOperator(email, grant) }))
    }
    case 'ledger': {
      if (body.action === 'status') return run(() => handlers.ledgerStatus())
      const { beforeMs, dryRun, archiveDir } = body
      if (body.action !== 'retain' || typeof beforeMs !== 'number' || typeof dryRun !== 'boolean' || !(archiveDir === null || typeof archiveDir === 'string')) {
        return Response.json({ error: 'ledger takes action status, or retain with beforeMs, dryRun and archiveDir' }, { status: 400 })
      }
      return run(() => handlers.retainUsage({ beforeMs, dryRun, archiveDir }))
    }
    default:
      return Response.json({ error: `unknown command ${JSON.stringify(body.command)}` }, { status: 400 })
  }
}

async function run(work: () => Promise<unknown>): Promise<Response> {
  try {
    return Response.json(await work())
  } catch (error) {
    return Response.json({ error: (error as Error).message }, { status: 500 })
  }
}

function parseDemoOptions({ balanceMicros, rpmLimit }: Record<string, unknown>): DemoTenantOptions {
  if (balanceMicros !== null && !(typeof balanceMicros === 'string' && /^\d+$/.test(balanceMicros))) throw new Error('balanceMicros must be null or a string of digits')
  if (rpmLimit !== null && !(Number.isSafeInteger(rpmLimit) && (rpmLimit as number) > 0)) throw new Error('rpmLimit must be null or a positive integer')
  return {
    ...(balanceMicros === null ? {} : { balanceMicros: BigInt(balanceMicros) }),
    rpmLimit: rpmLimit as number | null,
  }
}
