import { describe, expect, test } from 'bun:test'
import { buildRequest, curlCode, nilegateSdkCode, openaiNodeCode, type DraftSettings } from '../../../web/src/screens/playground/request-code'

const settings = (changes: Partial<DraftSettings> = {}): DraftSettings => ({
  model: 'nile/chat-small',
  temperature: '',
  top_p: '',
  max_tokens: '',
  stop: '',
  presence_penalty: '',
  frequency_penalty: '',
  seed: '',
  ...changes,
})

describe('buildRequest', () => {
  test('sends only the settings and messages that were written, numbers as numbers, streamed with usage', () => {
    const built = buildRequest(settings({ temperature: '0.7', max_tokens: '64', seed: '-3', stop: 'END\n###' }), [
      { role: 'system', content: '  ' },
      { role: 'user', content: 'مرحبا' },
    ])

    expect(built).toEqual({
      request: {
        model: 'nile/chat-small',
        messages: [{ role: 'user', content: 'مرحبا' }],
        temperature: 0.7,
        max_tokens: 64,
        seed: -3,
        stop: ['END', '###'],
        stream: true,
        stream_options: { include_usage: true },
      },
    })
  })

  test('names every field out of range, and a missing model and message', () => {
    const built = buildRequest(settings({ model: '', temperature: '2.5', top_p: 'x', max_tokens: '1.5', stop: 'a\nb\nc\nd\ne' }), [{ role: 'user', content: ' ' }])

    expect('problems' in built && built.problems.map((problem) => problem.param)).toEqual(['model', 'messages', 'temperature', 'top_p', 'max_tokens', 'stop'])
  })

  test('sends one stop sequence as a string', () => {
    const built = buildRequest(settings({ stop: 'END' }), [{ role: 'user', content: 'hi' }])

    expect('request' in built && built.request.stop).toBe('END')
  })
})

describe('the request as code', () => {
  const built = buildRequest(settings({ temperature: '0' }), [
    { role: 'system', content: "It's terse." },
    { role: 'user', content: 'اكتب جملة' },
  ])
  if (!('request' in built)) throw new Error('the draft should build')
  const request = built.request
  const baseURL = 'https://gw.example/v1'

  test('curl posts the exact body to the inference route with a key placeholder, quoting single quotes', async () => {
    const code = curlCode(baseURL, request)

    const proc = Bun.spawn(['sh', '-c', `curl() { for arg in "$@"; do printf '%s\\0' "$arg"; done; }\n${code}`], { env: { NILEGATE_API_KEY: 'sk-test' }, stdout: 'pipe' })
    const args = (await new Response(proc.stdout).text()).split('\0').slice(0, -1)
    expect(args.slice(0, 2)).toEqual(['-N', 'https://gw.example/v1/chat/completions'])
    expect(args).toContain('Authorization: Bearer sk-test')
    expect(JSON.parse(args.at(-1)!)).toEqual(request)
  })

  test('the openai and nilegate code carry the body and the base URL, never a session', () => {
    for (const code of [openaiNodeCode(baseURL, request), nilegateSdkCode(baseURL, request)]) {
      const body = code.slice(code.indexOf('create(') + 'create('.length, code.indexOf('\n})') + 2)

      expect(JSON.parse(body)).toEqual(request)
      expect(code).toContain(`baseURL: "${baseURL}"`)
      expect(code).toContain('apiKey: process.env.NILEGATE_API_KEY')
      expect(code).not.toMatch(/ngs_|csrf|cookie/i)
    }
  })
})
