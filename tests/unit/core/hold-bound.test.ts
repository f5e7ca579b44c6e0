import { describe, expect, test } from 'bun:test'
import { Tiktoken } from 'js-tiktoken/lite'
import cl100k from 'js-tiktoken/ranks/cl100k_base'
import o200k from 'js-tiktoken/ranks/o200k_base'
import type { ChatCompletionRequest } from '@nilegate/shared/schemas/chat'
import type { CatalogModel } from '../../../server/core/catalog'
import {
  billWithinHold,
  boundTokensPerEmbeddingInput,
  boundTokensPerMessage,
  boundTokensPerRequest,
  chatHoldBound,
  chatPromptBound,
  embeddingsHoldBound,
  holdBound,
  insufficientBalanceMessage,
} from '../../../server/core/hold-bound'
import { costMicros } from '../../../server/core/money'

// Whole EGP per 1M tokens, so a cost in micro-EGP is prompt * 5 + completion * 15 exactly.
const model = { contextWindow: 32_768, maxOutputTokens: 1_024, inputPriceMicrosPerM: 5_000_000n, outputPriceMicrosPerM: 15_000_000n } as CatalogModel
const chat = (content: string, overrides: Partial<ChatCompletionRequest> & Record<string, unknown> = {}): ChatCompletionRequest => ({ model: 'm', messages: [{ role: 'user', content }], ...overrides })
const bytes = (text: string) => new TextEncoder().encode(text).length

// Texts real tokenizers split finer than 4 characters a token.
const samples: Record<string, string> = {
  digits: '0123456789'.repeat(200),
  base64: Buffer.from(Array.from({ length: 1_500 }, (_, i) => (i * 7919) % 256)).toString('base64'),
  code: 'for (let i = 0; i < n; i++) { x[i] = (y[i] ^ 0x5f) >>> 3; }\n'.repeat(30),
  emoji: '😀🎉🧪👩‍👩‍👧‍👦🇪🇬'.repeat(100),
  amharic: 'ሰላም ለዓለም፣ እንዴት ነህ? '.repeat(60),
  arabic: 'مرحبا بالعالم، كيف حالك اليوم؟ '.repeat(60),
  chinese: '你好世界，今天天气很好。'.repeat(100),
  syriac: 'ܫܠܡܐ ܥܠܡܐ '.repeat(100),
  hindi: 'नमस्ते दुनिया, आप कैसे हैं? '.repeat(60),
  punctuation: '!?.,;:"\'()[]{}<>/\\|@#$%^&*~`'.repeat(60),
}

describe('the prompt bound of a chat request', () => {
  test('is at least the UTF-8 bytes of the prompt plus the framing, for every kind of text', () => {
    for (const [kind, text] of Object.entries(samples)) {
      expect({ kind, bound: chatPromptBound(chat(text), 1e9) }).toEqual({ kind, bound: bytes(text) + boundTokensPerMessage + boundTokensPerRequest })
    }
  })

  test('is never below what the cl100k_base and o200k_base tokenizers make of the prompt', () => {
    const tokenizers = [new Tiktoken(cl100k), new Tiktoken(o200k)]
    for (const [kind, text] of Object.entries(samples)) {
      const bound = chatPromptBound(chat(text), 1e9)
      // With room for the ten or so tokens a chat template frames a message with.
      for (const tokenizer of tokenizers) expect({ kind, below: bound < tokenizer.encode(text).length + 10 }).toEqual({ kind, below: false })
    }
  })

  test('counts tool definitions, tool choice, the response schema, names, tool calls and fields the schema does not name', () => {
    const tools = [{ type: 'function' as const, function: { name: 'lookup', description: 'Looks a thing up', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }]
    const responseFormat = { type: 'json_schema' as const, json_schema: { name: 'answer', schema: { type: 'object', properties: { a: { type: 'integer' } } } } }
    const plain = chatPromptBound(chat('hi'), 1e9)

    const withTools = chatPromptBound(chat('hi', { tools, tool_choice: 'required', response_format: responseFormat, documents: [{ text: 'a document' }] }), 1e9)
    const conversation = chatPromptBound(
      {
        model: 'm',
        messages: [
          { role: 'user', content: 'hi', name: 'amr' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }] },
          { role: 'tool', content: 'found', tool_call_id: 'call_1' },
        ],
      },
      1e9,
    )

    expect(withTools - plain).toBe(bytes(JSON.stringify(tools)) + bytes('"required"') + bytes(JSON.stringify(responseFormat)) + bytes(JSON.stringify([{ text: 'a document' }])))
    expect(conversation).toBe(boundTokensPerRequest + 3 * boundTokensPerMessage + bytes('hi') + bytes('amr') + bytes('call_1lookup{"q":"x"}') + bytes('found') + bytes('call_1'))
  })

  test('leaves out the sampling fields, which are no prompt', () => {
    const sampled = chat('hi', { temperature: 0.5, top_p: 0.9, n: 2, max_tokens: 5, stop: ['x'], seed: 1, user: 'u', metadata: { a: 'b' }, logit_bias: { '1': 2 }, stream: false })

    expect(chatPromptBound(sampled, 1e9)).toBe(chatPromptBound(chat('hi'), 1e9))
  })

  test('counts an image, a sound or a file as the whole context window', () => {
    const image = { type: 'image_url' as const, image_url: { url: 'https://example.com/cat.png' } }
    const audio = { type: 'input_audio' as const, input_audio: { data: 'AAAA', format: 'wav' as const } }

    for (const part of [image, audio]) {
      const hold = chatHoldBound(model, { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this?' }, part] }], max_tokens: 10 })
      expect(hold.promptTokens).toBe(model.contextWindow)
    }
  })
})

describe('the hold', () => {
  test('holds the prompt bound at the input price and max_tokens times n at the output price', () => {
    const hold = chatHoldBound(model, chat('0'.repeat(16_000), { max_tokens: 10, n: 3 }))

    const prompt = 16_000 + boundTokensPerMessage + boundTokensPerRequest
    expect(hold).toEqual({ promptTokens: prompt, completionTokens: 30, contextWindow: model.contextWindow, micros: BigInt(prompt * 5 + 30 * 15) })
  })

  test("holds the model's max output when the request names no max_tokens", () => {
    expect(chatHoldBound(model, chat('hi')).completionTokens).toBe(model.maxOutputTokens)
  })

  test('caps the prompt and the output at the context window, and holds the costliest split of the window', () => {
    const small = { contextWindow: 100, inputPriceMicrosPerM: 1_000_000n, outputPriceMicrosPerM: 3_000_000n }

    // Output is dearer: the whole output, and what prompt fits beside it.
    expect(holdBound(small, 80, 50)).toEqual({ promptTokens: 80, completionTokens: 50, contextWindow: 100, micros: 50n + 150n })
    // Prompt is dearer: the whole prompt, and what output fits beside it.
    expect(holdBound({ ...small, inputPriceMicrosPerM: 9_000_000n }, 80, 50).micros).toBe(80n * 9n + 20n * 3n)
    expect(holdBound(small, 10_000, 10_000)).toEqual({ promptTokens: 100, completionTokens: 100, contextWindow: 100, micros: 300n })
  })

  test('is the most any usage within the context window can cost, and no more', () => {
    let seed = 7
    const random = (below: number) => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) % below
    for (let round = 0; round < 200; round++) {
      const window = 1 + random(60)
      const prices = { contextWindow: window, inputPriceMicrosPerM: BigInt(random(5_000_000)), outputPriceMicrosPerM: BigInt(random(5_000_000)) }
      const [promptBound, outputBound, choices] = [random(90), 1 + random(90), 1 + random(3)]
      let worst = 0n
      for (let prompt = 0; prompt <= Math.min(promptBound, window); prompt++) {
        for (let output = 0; output <= Math.min(outputBound, window - prompt); output++) {
          const cost = costMicros(prompt, output * choices, prices.inputPriceMicrosPerM, prices.outputPriceMicrosPerM)
          if (cost > worst) worst = cost
        }
      }

      expect(holdBound(prices, promptBound, outputBound, choices).micros).toBe(worst)
    }
  })
})

describe('the hold of an embeddings request', () => {
  const embeddings = { ...model, contextWindow: 8_192, inputPriceMicrosPerM: 1_000_000n, outputPriceMicrosPerM: 0n } as CatalogModel

  test("holds each input's UTF-8 bytes plus the overhead per input, each at most the context window", () => {
    const items = [samples.digits!, samples.emoji!, 'x'.repeat(20_000)]

    const hold = embeddingsHoldBound(embeddings, items, null)

    const prompt = bytes(samples.digits!) + bytes(samples.emoji!) + 2 * boundTokensPerEmbeddingInput + 8_192
    expect(hold).toEqual({ promptTokens: prompt, completionTokens: 0, contextWindow: 8_192, micros: BigInt(prompt) })
  })

  test('counts token-id input as the bytes of the text the ids decode to, and at least as many as the ids', () => {
    expect(embeddingsHoldBound(embeddings, ['hello world'], [2]).promptTokens).toBe(11 + boundTokensPerEmbeddingInput)
    expect(embeddingsHoldBound(embeddings, ['ab'], [5]).promptTokens).toBe(5 + boundTokensPerEmbeddingInput)
  })

  test('adds the fields passed to the upstream besides the input to each input', () => {
    expect(embeddingsHoldBound(embeddings, ['a', 'b'], null, 10).promptTokens).toBe(2 * (1 + 10 + boundTokensPerEmbeddingInput))
  })
})

describe('billing within the hold', () => {
  const hold = holdBound(model, 100, 10)

  test('bills usage within the hold as reported', () => {
    expect(billWithinHold(hold, 90, 10, model)).toEqual({ promptTokens: 90, completionTokens: 10, costMicros: 600n, unbilledPromptTokens: 0, unbilledCompletionTokens: 0, unbilledMicros: 0n })
  })

  test('bills no more than the hold, and records the tokens and micro-EGP beyond it as unbilled', () => {
    expect(billWithinHold(hold, 16_000, 12, model)).toEqual({
      promptTokens: 100,
      completionTokens: 10,
      costMicros: 650n,
      unbilledPromptTokens: 15_900,
      unbilledCompletionTokens: 2,
      unbilledMicros: BigInt(16_000 * 5 + 12 * 15) - 650n,
    })
  })

  test('bills a request that held nothing (it was not admitted) as reported', () => {
    expect(billWithinHold(null, 16_000, 12, model).costMicros).toBe(BigInt(16_000 * 5 + 12 * 15))
  })
})

test('the 402 message quotes the hold and says what to do', () => {
  const message = insufficientBalanceMessage(chatHoldBound(model, chat('0'.repeat(16_000), { max_tokens: 10 })))

  expect(message).toBe(
    'This request holds up to 0.081510 EGP, more than the balance has left: the most it can cost, for a prompt of up to 16272 tokens ' +
      "(a token per UTF-8 byte, the most any tokenizer makes, plus chat framing) and 10 output tokens (max_tokens, or the model's max output, times n), " +
      'within the context window of 32768 tokens. Lower max_tokens, shorten the prompt, or top up.',
  )
})
