import { describe, expect, test } from 'bun:test'
import { billingMonth } from '../../server/core/admission'
import { EdgeLimiter } from '../../server/core/edge-limiter'
import type { ChatCompletionRequest } from '@nilegate/shared/schemas/chat'
import { loadCatalogFile } from '../../server/catalog-file'
import { chatHoldBound } from '../../server/core/hold-bound'
import { chatModel, chatRequest, demoCatalogPath, embeddingsModel, keyIdentity, ScriptedProvider, testApp } from '../support/test-app'

// nile/qwen2.5-7b-instruct: 5 EGP per 1M input tokens, 15 EGP per 1M output tokens (demo catalog).
const demoChatModel = (await loadCatalogFile(demoCatalogPath)).find((model) => model.id === chatModel)!
/** What admission holds for `body` (core/hold-bound.ts). */
const holdOf = (body: ChatCompletionRequest) => chatHoldBound(demoChatModel, body).micros
const post = (send: Awaited<ReturnType<typeof testApp>>['send'], body: unknown) => send('POST', '/v1/chat/completions', JSON.stringify(body))

async function settledSnapshot(admission: Awaited<ReturnType<typeof testApp>>['admission']) {
  // Settlement runs off the response path: wait until no hold is open.
  for (let i = 0; i < 100; i++) {
    const snapshot = await admission.snapshot('org_test', billingMonth(Date.now()))
    if (snapshot && snapshot.reservations.length === 0) return snapshot
    await Bun.sleep(1)
  }
  throw new Error('holds were never settled')
}

describe('admission on the inference routes', () => {
  test('a success carries the effective limit and what remains of it', async () => {
    const { send } = await testApp({ identity: keyIdentity({ rpmLimit: 40, projectRpmOverride: 30, planTier: 'developer' }) })

    const first = await post(send, chatRequest())
    const second = await post(send, chatRequest())

    expect(first.headers.get('x-ratelimit-limit-requests')).toBe('30')
    expect([first.headers.get('x-ratelimit-remaining-requests'), second.headers.get('x-ratelimit-remaining-requests')]).toEqual(['29', '28'])
  })

  test('past the RPM limit answers 429 with only Retry-After, and the message quotes the limit', async () => {
    const { send, provider } = await testApp({ identity: keyIdentity({ rpmLimit: 2 }) })

    await post(send, chatRequest())
    await post(send, chatRequest({ stream: true }))
    const refused = await post(send, chatRequest())

    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeWithin(1, 61)
    expect(refused.headers.get('x-ratelimit-limit-requests')).toBeNull()
    expect((await refused.json()).error).toMatchObject({ code: 'rate_limit_exceeded', type: 'rate_limit_error', message: expect.stringContaining('2 requests per minute') })
    expect(provider.calls).toHaveLength(2)
  })

  test('a zero balance answers 402 quota_exceeded', async () => {
    const { send } = await testApp({ balanceMicros: 0n })

    const response = await post(send, chatRequest())

    expect(response.status).toBe(402)
    expect((await response.json()).error).toMatchObject({ code: 'quota_exceeded', type: 'quota_exceeded' })
  })

  test('a balance below the hold answers 402 insufficient_balance quoting the hold and saying how to fix it', async () => {
    const { send } = await testApp({ balanceMicros: 1_000n })

    const response = await post(send, chatRequest({ max_tokens: 1_000 }))

    expect(response.status).toBe(402)
    const { message } = (await response.json()).error
    expect(message).toContain('holds up to 0.016415 EGP')
    expect(message).toContain('prompt of up to 283 tokens')
    expect(message).toContain('Lower max_tokens, shorten the prompt, or top up.')
  })

  test('the worst case counts the tool definitions and the response schema as prompt', async () => {
    const parameters = { type: 'object', properties: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`field_${i}`, { type: 'string', description: 'a field the model fills in' }])) }
    const plain = chatRequest({ max_tokens: 100 })
    const withTools = chatRequest({ max_tokens: 100, tools: [{ type: 'function', function: { name: 'fill_form', parameters } }] })
    const withSchema = chatRequest({ max_tokens: 100, response_format: { type: 'json_schema', json_schema: { name: 'form', schema: parameters } } })
    // Enough for the conversation and max_tokens, not for 200 described fields besides.
    const { send } = await testApp({ balanceMicros: holdOf(plain) })

    const answers = [await post(send, withTools), await post(send, withSchema), await post(send, plain)]

    expect(answers.map((answer) => answer.status)).toEqual([402, 402, 200])
    expect((await answers[0]!.json()).error.code).toBe('insufficient_balance')
  })

  test('a CJK or emoji prompt is held at a token a UTF-8 byte, not at four characters a token', async () => {
    const maxTokens = 10
    const cjk = chatRequest({ max_tokens: maxTokens, messages: [{ role: 'user', content: '你好世界'.repeat(1_000) }] })
    const emoji = chatRequest({ max_tokens: maxTokens, messages: [{ role: 'user', content: '😀'.repeat(4_000) }] })
    const latin = chatRequest({ max_tokens: maxTokens, messages: [{ role: 'user', content: 'word'.repeat(1_000) }] })
    // Enough for 4,000 bytes of Latin text, not for the 12,000 bytes of the CJK or the 16,000 of the emoji.
    const { send } = await testApp({ balanceMicros: holdOf(latin) })

    const answers = [await post(send, cjk), await post(send, emoji), await post(send, latin)]

    expect(answers.map((answer) => answer.status)).toEqual([402, 402, 200])
    expect((await answers[0]!.json()).error.code).toBe('insufficient_balance')
  })

  test('an Amharic prompt is held at three tokens a character, a Vietnamese one at three a marked letter: a token a UTF-8 byte', async () => {
    const maxTokens = 10
    // 1,500 Ethiopic characters: cl100k_base makes about 3 tokens of each.
    const amharic = chatRequest({ max_tokens: maxTokens, messages: [{ role: 'user', content: 'ሰላም'.repeat(500) }] })
    // 2,000 characters, 1,000 of them letters with two marks.
    const vietnamese = chatRequest({ max_tokens: maxTokens, messages: [{ role: 'user', content: 'ệt'.repeat(1_000) }] })
    const latin = chatRequest({ max_tokens: maxTokens, messages: [{ role: 'user', content: 'et'.repeat(1_000) }] })
    // Enough for the 2,000 bytes of the Latin text, not for the 4,500 of the Amharic or the 4,000 of the Vietnamese.
    const { send } = await testApp({ balanceMicros: holdOf(latin) })

    const answers = [await post(send, amharic), await post(send, vietnamese), await post(send, latin)]

    expect(answers.map((answer) => answer.status)).toEqual([402, 402, 200])
  })

  test('key and project monthly caps answer 402 with their codes, the project cap quoted in EGP', async () => {
    const keyCapped = await testApp({ identity: keyIdentity({ keyMonthlyCapMicros: 100n }) })
    const projectCapped = await testApp({ identity: keyIdentity({ projectMonthlyCapMicros: 2_500_000n }) })

    const keyResponse = await post(keyCapped.send, chatRequest({ max_tokens: 1_000 }))
    const projectResponse = await post(projectCapped.send, chatRequest({ max_tokens: 30_000, n: 10 }))

    expect((await keyResponse.json()).error.code).toBe('spending_cap_reached')
    expect(await projectResponse.json()).toMatchObject({ error: { code: 'project_spend_cap_exceeded', message: expect.stringContaining('2.500000 EGP') } })
  })

  test('embeddings are admitted at their input cost', async () => {
    const { send } = await testApp({ balanceMicros: 0n })

    const response = await send('POST', '/v1/embeddings', JSON.stringify({ model: embeddingsModel, input: 'hello' }))

    expect(response.status).toBe(402)
  })

  const limits: Array<{ limit: string; code: string; setUp: (cover: bigint) => Parameters<typeof testApp>[0] }> = [
    { limit: 'a balance', code: 'insufficient_balance', setUp: (cover) => ({ balanceMicros: cover }) },
    { limit: "a key's monthly cap", code: 'spending_cap_reached', setUp: (cover) => ({ identity: keyIdentity({ keyMonthlyCapMicros: cover }) }) },
    { limit: "a project's monthly cap", code: 'project_spend_cap_exceeded', setUp: (cover) => ({ identity: keyIdentity({ projectMonthlyCapMicros: cover }) }) },
  ]
  for (const { limit, code, setUp } of limits) {
    test(`500 concurrent requests against ${limit} covering exactly K worst cases: exactly K run, and nothing goes below zero`, async () => {
      const maxTokens = 100
      const body = chatRequest({ max_tokens: maxTokens })
      const worstCase = holdOf(body)
      const k = 37
      // Past the edge guard's 100 per second and 400 at once for one key, which is not what is tested here.
      const options = { balanceMicros: 10_000_000_000n, ...setUp(worstCase * BigInt(k)) }
      const { send, admission, usage } = await testApp({ ...options, edge: new EdgeLimiter(1_000, 1_000) })

      const answers = await Promise.all(Array.from({ length: 500 }, () => post(send, body).then(async (response) => (response.status === 200 ? 'admitted' : `${response.status} ${(await response.json()).error.code}`))))

      expect(answers.filter((answer) => answer === 'admitted')).toHaveLength(k)
      expect(answers.filter((answer) => answer === `402 ${code}`)).toHaveLength(500 - k)
      const snapshot = await settledSnapshot(admission)
      const debited = usage.reduce((sum, event) => sum + event.costMicros, 0n)
      expect(usage).toHaveLength(k)
      expect([snapshot.keySpend.get('key_test'), snapshot.projectSpend.get('proj_test')]).toEqual([debited, debited])
      expect(debited <= worstCase * BigInt(k)).toBe(true)
      expect(snapshot.balanceMicros).toBe(options.balanceMicros - debited)
      expect(snapshot.balanceMicros >= 0n).toBe(true)
    })
  }

  test('every request is settled exactly once at its actual cost, a dropped stream for what it produced', async () => {
    const provider = new ScriptedProvider()
    provider.usage = null
    provider.chunks = ['one ', 'two ', 'three ', 'four ']
    const { send, admission, usage } = await testApp({ provider, balanceMicros: 10_000_000n })

    await post(send, chatRequest())
    const stream = await post(send, chatRequest({ stream: true }))
    const reader = stream.body!.getReader()
    await reader.read()
    await reader.read()
    await reader.cancel()

    const snapshot = await settledSnapshot(admission)
    expect(usage.map((event) => event.status)).toEqual([200, 499])
    expect(snapshot.balanceMicros).toBe(10_000_000n - usage[0]!.costMicros - usage[1]!.costMicros)
    expect(snapshot.keySpend.get('key_test')).toBe(usage[0]!.costMicros + usage[1]!.costMicros)
  })

  test('counters are read from the ledger once, then kept', async () => {
    const { send, ledgerReads } = await testApp()

    await post(send, chatRequest())
    await post(send, chatRequest())

    expect(ledgerReads).toEqual(['org_test'])
  })

  test('requests of an organization without counters share one ledger read', async () => {
    const { send, ledgerReads } = await testApp({ ledgerDelayMs: () => 30 })

    const responses = await Promise.all(Array.from({ length: 20 }, () => post(send, chatRequest())))

    expect(responses.map((response) => response.status)).toEqual(Array(20).fill(200))
    expect(ledgerReads).toEqual(['org_test'])
  })
})

describe('admission when the ledger cannot be read', () => {
  test('answers 503 service_unavailable instead of serving unbilled', async () => {
    const { send, provider } = await testApp({ ledgerFails: true })

    const response = await post(send, chatRequest())

    expect(response.status).toBe(503)
    expect((await response.json()).error.code).toBe('service_unavailable')
    expect(provider.calls).toHaveLength(0)
  })

  test('answers 503 service_unavailable while too many usage rows wait to be written', async () => {
    const { send, provider, usage } = await testApp({ usageFull: true })

    const response = await post(send, chatRequest())

    expect(response.status).toBe(503)
    expect((await response.json()).error).toMatchObject({ code: 'service_unavailable', message: expect.stringContaining('Usage records cannot be written') })
    expect(provider.calls).toHaveLength(0)
    expect(usage).toHaveLength(0)
  })

  test('answers 503 service_unavailable when the ledger does not answer in time', async () => {
    const { send, provider } = await testApp({ ledgerHangs: true, ledgerTimeoutMs: 20 })

    const response = await post(send, chatRequest())

    expect(response.status).toBe(503)
    expect((await response.json()).error.code).toBe('service_unavailable')
    expect(provider.calls).toHaveLength(0)
  })

  test('a read slower than the wait still loads the counters, for the requests after it', async () => {
    const { send, provider, ledgerReads } = await testApp({ ledgerDelayMs: () => 400, ledgerTimeoutMs: 100 })

    // Sent together: the second joins the read the first started, and both stop waiting for it.
    const [first, joined] = await Promise.all([post(send, chatRequest()), post(send, chatRequest())])
    await Bun.sleep(500)
    const after = await post(send, chatRequest())

    expect([first.status, joined.status, after.status]).toEqual([503, 503, 200])
    expect(ledgerReads).toEqual(['org_test'])
    expect(provider.calls).toHaveLength(1)
  })

  test('a read that hangs is not joined past the wait: the next request reads again', async () => {
    const { send, ledgerReads } = await testApp({ ledgerDelayMs: (read) => (read === 0 ? 60_000 : 0), ledgerTimeoutMs: 20 })

    const first = await post(send, chatRequest())
    await Bun.sleep(30)
    const next = await post(send, chatRequest())

    expect([first.status, next.status]).toEqual([503, 200])
    expect(ledgerReads).toEqual(['org_test', 'org_test'])
  })
})

describe('the edge burst guard', () => {
  test('the 101st request of a key within a second answers 429 with Retry-After: 1, before the body is validated', async () => {
    const { send } = await testApp()
    for (let i = 0; i < 100; i++) await send('GET', '/v1/models')

    const refused = await send('POST', '/v1/chat/completions', '{"model":')

    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toBe('1')
    expect((await refused.json()).error.message).toBe('Too many requests at the edge; retry after 1 second.')
  })

  test('a stream holds its in-flight place until it ends', async () => {
    const edge = new EdgeLimiter(1_000, 1)
    const provider = new ScriptedProvider()
    const { send } = await testApp({ edge, provider })

    const stream = await post(send, chatRequest({ stream: true }))
    const whileStreaming = await post(send, chatRequest())
    await stream.text()
    const afterwards = await post(send, chatRequest())

    expect([stream.status, whileStreaming.status, afterwards.status]).toEqual([200, 429, 200])
  })
})
