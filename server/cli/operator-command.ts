import { parseArgs } from 'node:util'
import { loadConfig } from '../config'
import { isEmailAddress, normalizeEmail } from '../core/governance/accounts'
import { setOperatorFlag } from '../core/governance/operator'
import { callOperatorControl } from '../control-socket'
import { CliError, UsageError } from './cli-errors'
import { withDatabase } from './with-database'

export const operatorUsage = `Usage: bun server/cli.ts operator <grant|revoke> --email ADDRESS [--wait-ms N]

Makes an existing account a platform operator (grant), who may then use /v1/admin/*, or takes that
away (revoke). Takes effect on the user's next request; audited as user.operator_granted or
user.operator_revoked.
  --email ADDRESS   the account's e-mail address
  --wait-ms N       how long to wait for the embedded database's lock (default 10000)

Uses DATABASE_URL when set; otherwise the embedded database in DATA_DIR, through the running
gateway's control socket when there is one.`


interface OperatorArgs {
  grant: boolean
  email: string
  waitMs: number
}

export async function runOperatorCommand(args: string[], env: Record<string, string | undefined>): Promise<void> {
  const { grant, email, waitMs } = parseOperatorArgs(args)
  const { change } = await withDatabase(
    loadConfig(env),
    {
      viaGateway: (dataDir) => callOperatorControl(dataDir, email, grant),
      direct: async (database) => ({ change: await setOperatorFlag(database.governance.operator, email, grant) }),
    },
    waitMs,
  )
  if (!change) throw new CliError(`No account has the e-mail address ${email}. Sign up first (POST /v1/auth/signup), then run this again.`)
  const who = `${change.user.email} (${change.user.id})`
  if (grant) console.log(change.changed ? `${who} is now a platform operator.` : `${who} already was a platform operator; nothing changed.`)
  else console.log(change.changed ? `${who} is no longer a platform operator.` : `${who} was not a platform operator; nothing changed.`)
}

function parseOperatorArgs(args: string[]): OperatorArgs {
  let parsed
  try {
    parsed = parseArgs({ args, strict: true, allowPositionals: true, options: { email: { type: 'string' }, 'wait-ms': { type: 'string' } } })
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
  const { positionals, values } = parsed
  const [action, ...extra] = positionals
  if (action !== 'grant' && action !== 'revoke') throw new UsageError(`operator takes grant or revoke; got ${action === undefined ? 'neither' : JSON.stringify(action)}`)
  if (extra.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])}`)
  if (values.email === undefined) throw new UsageError('--email is required')
  const email = normalizeEmail(values.email)
  if (!isEmailAddress(email)) throw new UsageError(`--email takes an e-mail address; got ${JSON.stringify(values.email)}`)
  const waitMs = values['wait-ms'] === undefined ? 10_000 : /^\d{1,9}$/.test(values['wait-ms']) ? Number(values['wait-ms']) : Number.NaN
  if (Number.isNaN(waitMs)) throw new UsageError(`--wait-ms takes a whole number of milliseconds; got ${JSON.stringify(values['wait-ms'])}`)
  return { grant: action === 'grant', email, waitMs }
}
