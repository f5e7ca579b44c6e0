import { describe, expect, test } from 'bun:test'
import OpenAI from 'openai'
import { chatModel } from '../support/test-app'
import { expectShowsAmount } from './support/amounts'
import { useBrowser } from './support/browser'
import { confirmIfAsked, fetchFromPage, logInThroughPage, logOutThroughPage, openScreen } from './support/dashboard'
import { uniqueEmail, useDashboardGateway } from './support/gateway'
import { screenshot } from './support/screenshots'

// One customer, from an empty gateway to a revoked key, through the dashboard alone; the only
// other actors are the mail (printed by the embedded gateway) and an operator's top-up by API.
describe('a customer in the dashboard', () => {
  const gateway = useDashboardGateway()
  const browser = useBrowser()

  test('signs up, verifies, makes a project and a key with every option that the openai package uses, streams in the playground, sees the spend, and revokes the key', async () => {
    const { origin, baseUrl } = gateway.current
    const operator = await gateway.current.createOperator()
    const person = await browser.newContext(origin)
    const page = await person.newPage()
    const account = { email: uniqueEmail('customer'), password: 'customer passphrase, long enough' }

    await page.goto('/signup')
    await page.getByLabel(/^e-?mail/i).fill(account.email)
    await page.getByLabel(/^password$/i).fill(account.password)
    await page.getByRole('button', { name: /sign up|create account/i }).click()
    // Signing up logs in; until the address is verified the dashboard says so and offers a new mail.
    await page.getByRole('region', { name: /e-?mail verification/i }).waitFor()
    await screenshot(page, 'signup-verify-first')

    const link = await gateway.current.mailedLink(account.email, 'verify-email')
    expect(link).toStartWith(`${origin}/verify-email#token=`)
    await page.goto(link)
    await page.getByText(/verified/i).first().waitFor()
    expect(new URL(page.url()).hash).toBe('')
    await page.getByRole('link', { name: /overview|continue/i }).click()
    await logOutThroughPage(page)

    await logInThroughPage(page, account)
    await openScreen(page, '/organizations/new')
    await page.getByLabel(/name/i).first().fill('Nile Foods')
    await page.getByRole('button', { name: /create organization/i }).click()
    await page.waitForURL((url) => url.pathname !== '/organizations/new')
    const organizations = await fetchFromPage(page, 'GET', '/v1/organizations')
    const organization = (organizations.json.data as { id: string; name: string }[]).find((each) => each.name === 'Nile Foods')
    expect(organization).toBeDefined()
    const topUp = await gateway.current.api('POST', `/admin/organizations/${organization!.id}/credits`, {
      token: operator.token,
      headers: { 'idempotency-key': crypto.randomUUID() },
      body: { amount_egp: '100', note: 'first credit' },
    })
    expect(topUp.status).toBe(201)

    await openScreen(page, '/projects')
    await page.getByRole('button', { name: /new project|create project/i }).click()
    await page.getByLabel(/^(project )?name/i).fill('Support bot')
    await page.getByRole('button', { name: /^create( project)?$/i }).click()
    await page.getByRole('link', { name: 'Support bot' }).click()
    await page.getByRole('heading', { level: 1, name: 'Support bot' }).waitFor()

    await page.getByRole('button', { name: /create (api )?key|new (api )?key/i }).click()
    const createDialog = page.getByRole('dialog')
    await createDialog.getByLabel(/^(key )?name/i).fill('journey key')
    await createDialog.getByLabel(/^expiry/i).selectOption({ label: 'In 30 days' })
    await createDialog.getByLabel(/^rpm limit/i).fill('120')
    await createDialog.getByLabel(/^monthly spend cap/i).fill('20')
    await createDialog.getByLabel(/^ip allow-list/i).fill('127.0.0.1\n::1')
    await createDialog.getByRole('checkbox', { name: /^embeddings/i }).uncheck()
    await createDialog.getByRole('button', { name: /^create( key| api key)?$/i }).click()
    const secretDialog = page.getByRole('dialog', { name: /.+/ }).filter({ hasText: /you will not see (this|it).*again/i })
    await secretDialog.waitFor()
    await secretDialog.getByRole('button', { name: /copy/i }).click()
    const secret = await page.evaluate(() => navigator.clipboard.readText())
    expect(secret).toMatch(/^sk-[A-Za-z0-9]{32,}$/)
    expect(await secretDialog.textContent() + (await secretDialog.locator('input, textarea').evaluateAll((fields) => fields.map((field) => (field as HTMLInputElement).value).join(' ')))).toContain(secret)
    await screenshot(page, 'key-created-once')
    await secretDialog.getByRole('button', { name: /done|close/i }).first().click()
    await secretDialog.waitFor({ state: 'hidden' })
    expect(await page.content()).not.toContain(secret)

    const projectId = new URL(page.url()).pathname.split('/').at(-1)!
    const keys = await fetchFromPage(page, 'GET', `/v1/organization/projects/${projectId}/api_keys`)
    const made = (keys.json.data as Record<string, any>[]).find((key) => key.name === 'journey key')!
    const thirtyDays = Date.now() / 1000 + 30 * 86_400
    expect({ ...made, expires_at: Math.abs(made.expires_at - thirtyDays) < 2 * 86_400 }).toMatchObject({
      expires_at: true,
      rpm_limit: 120,
      monthly_spend_cap_egp: '20.000000',
      scopes: expect.not.arrayContaining(['embeddings']),
    })
    expect((made.ip_allow_list as string[]).map((entry) => entry.replace(/\/(32|128)$/, ''))).toEqual(['127.0.0.1', '::1'])

    const openai = new OpenAI({ baseURL: baseUrl, apiKey: secret, maxRetries: 0, timeout: 15_000 })
    const reply = await openai.chat.completions.create({ model: chatModel, messages: [{ role: 'user', content: 'Hello from the openai package' }] })
    expect(reply.choices[0]?.message.content?.length).toBeGreaterThan(0)
    const embedding = await openai.embeddings.create({ model: 'nile/bge-m3', input: 'outside the scopes' }).catch((error: unknown) => error)
    expect((embedding as InstanceType<typeof OpenAI.APIError>).status).toBe(403)

    await openScreen(page, '/playground')
    await page.getByRole('combobox', { name: /project/i }).selectOption({ label: 'Support bot' })
    await page.getByRole('combobox', { name: /model/i }).selectOption(chatModel)
    await page.getByRole('textbox', { name: /message|content/i }).last().fill('Say hello to Cairo')
    const streamed = page.waitForResponse((response) => new URL(response.url()).pathname === '/v1/playground/chat/completions')
    await page.getByRole('button', { name: /^send$/i }).click()
    const answer = await streamed
    expect(answer.headers()['content-type']).toContain('text/event-stream')
    await page.getByText(/tokens/i).filter({ hasText: /\d/ }).first().waitFor()
    await page.getByRole('button', { name: /^send$/i }).waitFor()
    await screenshot(page, 'playground-answer')

    // Usage reaches the ledger off the request path: wait until the API counts both requests, then
    // the overview must show what the API says.
    let books: { balance_egp: string; month_to_date_spend_egp: string; api_keys: { name: string; month_to_date_spend_egp: string }[] } | undefined
    let requests = 0
    for (let tries = 0; tries < 100 && requests < 2; tries++) {
      if (tries > 0) await Bun.sleep(100)
      const usage = await fetchFromPage(page, 'GET', `/v1/organization/usage?start_time=${Math.floor(Date.now() / 1000) - 86_400}&bucket_width=1h&limit=48`)
      requests = JSON.stringify(usage.json).match(/"num_model_requests":\d+/g)?.reduce((sum, field) => sum + Number(field.split(':')[1]), 0) ?? 0
      books = (await fetchFromPage(page, 'GET', '/v1/organization/balance')).json
    }
    expect(requests).toBe(2)
    expect(books!.month_to_date_spend_egp).not.toBe('0.000000')
    await openScreen(page, '/')
    const balance = page.getByRole('region', { name: /^balance$/i })
    await expectShowsAmount(balance, books!.balance_egp)
    await expectShowsAmount(balance, books!.month_to_date_spend_egp)
    await expectShowsAmount(page.getByRole('row').filter({ hasText: 'journey key' }).first(), books!.api_keys.find((key) => key.name === 'journey key')!.month_to_date_spend_egp)
    const modelRow = page.getByRole('row').filter({ hasText: chatModel }).first()
    await modelRow.waitFor()
    expect((await modelRow.getByRole('cell').allTextContents()).map((cell) => cell.trim())).toContain('2')
    expect(await page.locator('canvas').count()).toBeGreaterThan(0)
    await screenshot(page, 'overview-after-spend')

    await page.goto(`/projects`)
    await page.getByRole('link', { name: 'Support bot' }).click()
    const revoke = page.getByRole('row').filter({ hasText: 'journey key' }).getByRole('button', { name: /revoke/i })
    await revoke.click()
    await confirmIfAsked(page, /revoke/i, revoke)

    const refused = await openai.chat.completions.create({ model: chatModel, messages: [{ role: 'user', content: 'Still there?' }] }).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(OpenAI.APIError)
    expect([(refused as InstanceType<typeof OpenAI.APIError>).status, (refused as InstanceType<typeof OpenAI.APIError>).code]).toEqual([401, 'key_revoked'])
    person.expectNoProblems()
  }, 110_000)
})
