import { describe, expect, test } from 'bun:test'
import { InProcessAdmissionStore } from '../../../server/adapters/in-process/admission-store'
import { billingMonth, type LedgerCounters } from '../../../server/core/admission'
import { Catalog } from '../../../server/core/catalog'
import { completeChat } from '../../../server/core/chat-completions'
import { createEmbeddings } from '../../../server/core/embeddings'
import { chatHoldBound, embeddingsHoldBound } from '../../../server/core/hold-bound'
import type { InferenceRequest } from '../../../server/core/inference'
import type { Provider, UsageEvent } from '../../../server/core/ports'
import { upstreamCall, upstreamCompletion } from '../../support/fake-upstream'
import { keyIdentity } from '../../support/test-app'
import { waitFor } from '../../support/wait-for'

// The fake upstream's model: 1 EGP per 1M input tokens, 2 EGP per 1M output tokens, 8,192 tokens of context.
const model = upstreamCall('http://127.0.0.1:9/v1').model
const embeddingsModel = { ...upstreamCall('http://127.0.0.1:9/v1', { modality: 'embeddings' }).model, id: 'nile/upstream-embeddings' }
const body = { model: model.id, messages: [{ role: 'user' as const, content: '0123456789'.repeat(100) }], max_tokens: 10 }

const identity = keyIdentity({ scopes: ['chat.completions', 'embeddings'], keyMonthlyCapMicros: 500_000n, projectMonthlyCapMicros: 600_000n })

/** An upstream that reports `promptTokens` and `completionTokens` for every answer. */
function reporting(promptTokens: number, completionTokens: number): Provider {
  const usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens }
  return {
    chat: async () => upstreamCompletion('0123456789', usage) as Awaited<ReturnType<Provider['chat']>>,
    streamChat: async () => {
      throw new Error('not streamed here')
    },
    embed: async (input) => ({ vectors: input.items.map(() => new Float32Array(4)), promptTokens }),
  }
}

/** The core of a gateway with 1 EGP of credit, over `provider`. */
function gateway(provider: Provider) {
  const admission = new InProcessAdmissionStore()
  const usage: UsageEvent[] = []
  const ledger = { readCounters: async (_orgId: string, month: string): Promise<LedgerCounters> => ({ month, balanceMicros: 1_000_000n, keySpend: new Map(), projectSpend: new Map(), recordedIds: [] }) }
  const deps = { catalog: new Catalog([model, embeddingsModel]), providerFor: () => provider, usage: { record: (event: UsageEvent) => usage.push(event) }, admission, ledger, log: () => {} }
  const request = (): InferenceRequest => ({ requestId: `req_${crypto.randomUUID()}`, identity, signal: new AbortController().signal, startedAtMs: Date.now() })
  /** The organization's counters once the request's usage row is queued (after its settlement). */
  const settled = async () => {
    await waitFor(() => usage.length === 1, { what: 'the usage row' })
    return (await admission.snapshot('org_test', billingMonth(Date.now(), 'Africa/Cairo')))!
  }
  return { deps, request, usage, settled }
}

describe('settling a request whose upstream reports more than its hold', () => {
  test('debits the hold and no more, and records the usage beyond it on the usage row as unbilled', async () => {
    const { deps, request, usage, settled } = gateway(reporting(400_000, 50))
    const hold = chatHoldBound(model, body)

    await completeChat(deps, body, request())
    const counters = await settled()

    expect(usage[0]).toMatchObject({ promptTokens: hold.promptTokens, completionTokens: 10, costMicros: hold.micros, unbilled: { promptTokens: 400_000 - hold.promptTokens, completionTokens: 40, micros: 400_000n + 100n - hold.micros } })
    expect({ balance: counters.balanceMicros, key: counters.keySpend.get('key_test'), project: counters.projectSpend.get('proj_test') }).toEqual({ balance: 1_000_000n - hold.micros, key: hold.micros, project: hold.micros })
  })

  test('bills usage within the hold as reported, with nothing unbilled', async () => {
    const { deps, request, usage, settled } = gateway(reporting(900, 10))

    await completeChat(deps, body, request())
    const counters = await settled()

    expect(usage[0]).toMatchObject({ promptTokens: 900, completionTokens: 10, costMicros: 920n })
    expect(usage[0]!.unbilled).toBeUndefined()
    expect(counters.balanceMicros).toBe(1_000_000n - 920n)
  })

  test('an embeddings upstream that reports more than the hold is billed the hold', async () => {
    const { deps, request, usage, settled } = gateway(reporting(1_000_000, 0))
    const hold = embeddingsHoldBound(embeddingsModel, ['hello'], null)

    await createEmbeddings(deps, { model: embeddingsModel.id, input: 'hello' }, request())
    const counters = await settled()

    expect(usage[0]).toMatchObject({ promptTokens: hold.promptTokens, costMicros: hold.micros, unbilled: { promptTokens: 1_000_000 - hold.promptTokens, completionTokens: 0 } })
    expect(counters.balanceMicros).toBe(1_000_000n - hold.micros)
  })
})

test('a request the balance cannot hold is refused with 402, the message quoting the hold', async () => {
  const { deps, request } = gateway(reporting(1, 1))
  const huge = { ...body, messages: [{ role: 'user' as const, content: '0'.repeat(8_000) }], max_tokens: 100 }

  const refused = await completeChat({ ...deps, ledger: { readCounters: async (_orgId: string, month: string) => ({ month, balanceMicros: 1_000n, keySpend: new Map(), projectSpend: new Map(), recordedIds: [] }) } }, huge, request()).catch((error) => error)

  expect(refused.toBody().error).toMatchObject({ code: 'insufficient_balance', type: 'quota_exceeded', message: expect.stringContaining(`holds up to 0.008292 EGP`) })
  expect(refused.message).toContain('Lower max_tokens, shorten the prompt, or top up.')
})
