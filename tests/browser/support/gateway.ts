import { afterAll, beforeAll } from 'bun:test'
import { createMigratedPgliteDir } from '../../support/databases'
import { startGateway, type DemoTenantJson, type RunningGateway } from '../../support/gateway-process'
import { childEnv, runBun } from '../../support/processes'

/** An answer of the API: its status and parsed JSON body. */
export interface ApiAnswer {
  status: number
  json: any
}

export interface ApiCallOptions {
  /** A session token sent as `Authorization: Bearer`. */
  token?: string
  body?: unknown
  headers?: Record<string, string>
}

/** An account made through the API for a test to log in with. */
export interface TestAccount {
  email: string
  password: string
}

/** The gateway a browser test drives, with what its setup needs besides the browser. */
export interface DashboardGateway {
  /** `http://127.0.0.1:PORT`, where the dashboard lives. */
  readonly origin: string
  /** `origin` + `/v1`. */
  readonly baseUrl: string
  readonly process: RunningGateway
  /** Calls the API as curl would (no cookies); `path` starts after `/v1`. */
  api(method: string, path: string, options?: ApiCallOptions): Promise<ApiAnswer>
  /** Runs `bun server/cli.ts <args>` against this gateway's embedded database; throws unless it exits 0. */
  cli(args: string[]): Promise<string>
  /** The last link to the dashboard page `page` (e.g. `verify-email`) mailed to `email`, waiting for it. */
  mailedLink(email: string, page: string): Promise<string>
  /** The last one-time token with `prefix` (e.g. `ngv_`) mailed to `email`, waiting for it. */
  mailedToken(email: string, prefix: string): Promise<string>
  /** Signs up and verifies an account through the API. */
  createVerifiedAccount(label: string): Promise<TestAccount>
  /** A verified account granted platform-operator rights with the CLI, and its session token. */
  createOperator(): Promise<TestAccount & { token: string }>
  /** A demo organization with credit, its project and API key, and its owner (verified). */
  createDemoTenant(balanceEgp?: number): Promise<DemoTenantJson>
  /** A session token for the account (the API login, not the browser's cookie). */
  logIn(account: TestAccount): Promise<string>
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
let accounts = 0

/** A unique e-mail address for one test account. */
export function uniqueEmail(label: string): string {
  return `${label}-${Date.now()}-${++accounts}@example.test`
}

/**
 * Starts one gateway on its embedded defaults (PGlite in a temp DATA_DIR, the in-process store,
 * the simulator, mail printed to the console) for the enclosing file and stops it afterwards.
 * The DATA_DIR is chosen here so that the CLI reaches the same database (through the running
 * gateway's control socket).
 */
export function useDashboardGateway(env: Record<string, string> = {}): { readonly current: DashboardGateway } {
  let gateway: DashboardGateway | undefined
  let removeDataDir = () => {}
  let stop = async () => {}
  beforeAll(async () => {
    const dataDir = await createMigratedPgliteDir()
    removeDataDir = dataDir.remove
    const running = await startGateway({ database: 'pglite', env: { ...env, DATA_DIR: dataDir.path } })
    stop = () => running.stop()
    // The first page request builds the dashboard (seconds on a busy machine): pay for it here,
    // not inside a test's step timeouts.
    const page = await fetch(`${running.origin}/login`)
    if (page.status !== 200) throw new Error(`GET /login answered ${page.status}: ${(await page.text()).slice(0, 1000)}\n--- the gateway printed:\n${running.output().slice(-3000)}`)
    gateway = dashboardGateway(running, dataDir.path)
  }, 60_000)
  afterAll(async () => {
    await stop()
    removeDataDir()
  }, 30_000)
  return {
    get current(): DashboardGateway {
      if (!gateway) throw new Error('the gateway has not started (see the beforeAll failure above)')
      return gateway
    },
  }
}

function dashboardGateway(running: RunningGateway, dataDir: string): DashboardGateway {
  const cliEnv = childEnv({ DATA_DIR: dataDir })

  async function api(method: string, path: string, options: ApiCallOptions = {}): Promise<ApiAnswer> {
    const headers: Record<string, string> = { ...options.headers }
    if (options.body !== undefined) headers['content-type'] = 'application/json'
    if (options.token) headers.authorization = `Bearer ${options.token}`
    const response = await fetch(`${running.baseUrl}${path}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) })
    const text = await response.text()
    return { status: response.status, json: text ? JSON.parse(text) : null }
  }

  async function expectOk(answer: Promise<ApiAnswer>, what: string): Promise<any> {
    const { status, json } = await answer
    if (status >= 300) throw new Error(`${what} answered ${status}: ${JSON.stringify(json)}`)
    return json
  }

  /** The text of every mail printed for `email`, oldest first, each cut where the next printed mail starts. */
  function mailsTo(email: string): string[] {
    return running
      .output()
      .split(`mail to ${email}:`)
      .slice(1)
      .map((mail) => mail.split('\nmail to ')[0]!)
  }

  async function lastMailed(email: string, pattern: RegExp, what: string): Promise<RegExpMatchArray> {
    await running.waitForOutput(new RegExp(`mail to ${escapeRegExp(email)}:[\\s\\S]*?${pattern.source}`), 15_000).catch((error: Error) => {
      throw new Error(`no ${what} was mailed to ${email}: ${error.message}`)
    })
    for (const mail of mailsTo(email).reverse()) {
      const match = mail.match(pattern)
      if (match) return match
    }
    throw new Error(`no ${what} was mailed to ${email}`)
  }

  const gateway: DashboardGateway = {
    origin: running.origin,
    baseUrl: running.baseUrl,
    process: running,
    api,
    async cli(args) {
      const { code, stdout, stderr } = await runBun(['server/cli.ts', ...args], cliEnv, 30_000)
      if (code !== 0) throw new Error(`bun server/cli.ts ${args.join(' ')} exited with ${code}:\n${stdout}${stderr}`)
      return stdout
    },
    async mailedLink(email, page) {
      return (await lastMailed(email, new RegExp(`https?://\\S+/${page}#token=[A-Za-z0-9_-]+`), `link to /${page}`))[0]
    },
    async mailedToken(email, prefix) {
      return (await lastMailed(email, new RegExp(`${prefix}[A-Za-z0-9]{20,}`), `${prefix} token`))[0]
    },
    async createVerifiedAccount(label) {
      const account = { email: uniqueEmail(label), password: `${label} has a long enough passphrase` }
      await expectOk(api('POST', '/auth/signup', { body: account }), 'POST /v1/auth/signup')
      await expectOk(api('POST', '/auth/verify_email', { body: { token: await gateway.mailedToken(account.email, 'ngv_') } }), 'POST /v1/auth/verify_email')
      return account
    },
    async logIn(account) {
      const json = await expectOk(api('POST', '/auth/login', { body: { email: account.email, password: account.password } }), 'POST /v1/auth/login')
      return json.access_token as string
    },
    async createOperator() {
      const account = await gateway.createVerifiedAccount('operator')
      await gateway.cli(['operator', 'grant', '--email', account.email])
      return { ...account, token: await gateway.logIn(account) }
    },
    createDemoTenant: (balanceEgp) => running.createDemoTenant(balanceEgp === undefined ? {} : { balanceEgp }),
  }
  return gateway
}
