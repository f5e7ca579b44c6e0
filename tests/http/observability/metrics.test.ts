import { describe, expect, test } from 'bun:test'
import { chatModel, chatRequest } from '../../support/test-app'
import { CounterCells, HistogramCells } from '../../../server/observability/metric-cells'
import { observedApp } from './observed-app'

const chatSeries = (status: number, code = '', model = chatModel) => `nilegate_http_requests_total{route="/v1/chat/completions",method="POST",model="${model}",status="${status}",code="${code}"}`

/** The names and labels of every series of a family in the text. */
function seriesOf(text: string, family: string): string[] {
  return text.split('\n').filter((line) => line.startsWith(`${family}{`) || line.startsWith(`${family} `))
}

describe('GET /metrics', () => {
  test('answers the Prometheus text format without credentials when no token is set', async () => {
    const { send } = await observedApp()

    const response = await send('GET', '/metrics', { headers: { authorization: '' } })
    const text = await response.text()

    expect({ status: response.status, type: response.headers.get('content-type') }).toEqual({ status: 200, type: 'text/plain; version=0.0.4; charset=utf-8' })
    expect(text).toContain('# TYPE nilegate_http_requests_total counter')
    expect(text).toContain('# TYPE nilegate_http_request_duration_seconds histogram')
    expect(text).toContain('nilegate_http_requests_in_flight 1')
  })

  test('moves the request, token, billing, admission and upstream series after a chat completion', async () => {
    const { send, metricValue, usage } = await observedApp()

    const response = await send('POST', '/v1/chat/completions', { body: chatRequest() })
    await response.json()

    expect(response.status).toBe(200)
    const [event] = usage
    expect({
      requests: await metricValue(chatSeries(200)),
      durations: await metricValue(`nilegate_http_request_duration_seconds_count{route="/v1/chat/completions",model="${chatModel}"}`),
      promptTokens: await metricValue(`nilegate_tokens_total{model="${chatModel}",kind="prompt"}`),
      completionTokens: await metricValue(`nilegate_tokens_total{model="${chatModel}",kind="completion"}`),
      billed: await metricValue(`nilegate_billed_micro_egp_total{model="${chatModel}"}`),
      admitted: await metricValue(`nilegate_admissions_total{model="${chatModel}",outcome="admitted",status=""}`),
      upstream: await metricValue(`nilegate_upstream_calls_total{model="${chatModel}",deployment="${chatModel}#0",outcome="success"}`),
      inFlight: await metricValue('nilegate_http_requests_in_flight'),
    }).toEqual({ requests: 1, durations: 1, promptTokens: 7, completionTokens: 2, billed: Number(event!.costMicros), admitted: 1, upstream: 1, inFlight: 0 })
    expect(event!.costMicros).toBeGreaterThan(0n)
  })

  test('counts a stream once it ends, with its time to first token, and no stream in flight after it', async () => {
    const { send, metricValue } = await observedApp()

    const response = await send('POST', '/v1/chat/completions', { body: chatRequest({ stream: true }) })
    const streaming = await metricValue('nilegate_streams_in_flight')
    await response.text()

    expect(streaming).toBe(1)
    expect({
      requests: await metricValue(chatSeries(200)),
      firstTokens: await metricValue(`nilegate_time_to_first_token_seconds_count{model="${chatModel}"}`),
      streams: await metricValue('nilegate_streams_in_flight'),
      inFlight: await metricValue('nilegate_http_requests_in_flight'),
    }).toEqual({ requests: 1, firstTokens: 1, streams: 0, inFlight: 0 })
  })

  test('counts refused admissions by code: 402 when the balance cannot cover the request, 429 past the rate limit', async () => {
    const poor = await observedApp({ balanceMicros: 1n })
    const limited = await observedApp({ identity: { rpmLimit: 1 } })

    const refused = await poor.send('POST', '/v1/chat/completions', { body: chatRequest() })
    const statuses = [(await limited.send('POST', '/v1/chat/completions', { body: chatRequest() })).status, (await limited.send('POST', '/v1/chat/completions', { body: chatRequest() })).status]

    expect([refused.status, ...statuses]).toEqual([402, 200, 429])
    expect({
      poor: await poor.metricValue(`nilegate_admissions_total{model="${chatModel}",outcome="insufficient_balance",status="402"}`),
      poorRequests: await poor.metricValue(chatSeries(402, 'insufficient_balance')),
      limitedAdmitted: await limited.metricValue(`nilegate_admissions_total{model="${chatModel}",outcome="admitted",status=""}`),
      limitedRefused: await limited.metricValue(`nilegate_admissions_total{model="${chatModel}",outcome="rate_limit_exceeded",status="429"}`),
    }).toEqual({ poor: 1, poorRequests: 1, limitedAdmitted: 1, limitedRefused: 1 })
  })

  test('keeps its label sets bounded: a flood of made-up model names and paths makes no new series', async () => {
    const { send, metrics } = await observedApp()
    const flood = async () => {
      // Under the key's burst limit of 100 a second: each made-up model is answered model_not_found.
      await send('POST', '/v1/chat/completions', { body: chatRequest({ model: `made-up/${crypto.randomUUID()}` }) })
      await send('GET', `/no/such/route/${crypto.randomUUID()}`, { headers: { authorization: '' } })
    }
    await flood()
    const before = seriesOf(await metrics!.text(), 'nilegate_http_requests_total').map((line) => line.replace(/ \d+$/, ''))

    for (let i = 0; i < 60; i++) await flood()
    const after = seriesOf(await metrics!.text(), 'nilegate_http_requests_total')

    expect(after.map((line) => line.replace(/ \d+$/, ''))).toEqual(before)
    expect(after).toContain(`${chatSeries(400, 'model_not_found', 'other')} 61`)
    expect(after).toContain('nilegate_http_requests_total{route="unmatched",method="GET",model="",status="404",code="not_found"} 61')
    expect(after.join('\n')).not.toContain('made-up')
  })

  test('labels no key, organization, project or request id', async () => {
    const { send, metrics, identity } = await observedApp()

    const response = await send('POST', '/v1/chat/completions', { body: chatRequest() })
    await response.json()
    const text = await metrics!.text()

    for (const id of [identity.keyId, identity.orgId, identity.projectId, response.headers.get('x-request-id')!]) expect(text).not.toContain(id)
  })
})

describe('METRICS_TOKEN', () => {
  test('makes GET /metrics answer 401 without the token or with another, and the text with it', async () => {
    const token = 'scrape-token-0123456789'
    const { send } = await observedApp({ metricsToken: token })

    const missing = await send('GET', '/metrics', { headers: { authorization: '' } })
    const wrong = await send('GET', '/metrics', { headers: { authorization: 'Bearer scrape-token-0123456780' } })
    const right = await send('GET', '/metrics', { headers: { authorization: `Bearer ${token}` } })
    const codes = [((await missing.json()) as { error: { code: string } }).error.code, ((await wrong.json()) as { error: { code: string } }).error.code]

    expect([missing.status, wrong.status, right.status]).toEqual([401, 401, 200])
    expect(codes).toEqual(['missing_auth_header', 'invalid_api_key'])
    expect(await right.text()).toContain('nilegate_http_requests_total')
  })
})

describe('METRICS=off', () => {
  test('records nothing, and GET /metrics answers 404', async () => {
    const { send, metrics } = await observedApp({ metrics: false })

    const chat = await send('POST', '/v1/chat/completions', { body: chatRequest() })
    const scrape = await send('GET', '/metrics', { headers: { authorization: '' } })

    expect([chat.status, scrape.status, metrics]).toEqual([200, 404, null])
    expect(((await scrape.json()) as { error: { message: string } }).error.message).toContain('METRICS=off')
  })
})

describe('metric cells', () => {
  test('past their cap, new label values share one series labelled other, and make nothing new', async () => {
    const family = new CounterCells('test_total', 'A test counter.', ['model', 'status'], 3)

    for (const model of ['a', 'b', 'c', 'd', 'e']) family.cell(model, 200).value++
    family.cell('a', 200).value++
    const values = (await family.get()).values.map(({ labels, value }) => [labels.model, labels.status, value])

    expect(values).toEqual([
      ['a', '200', 2],
      ['b', '200', 1],
      ['c', '200', 1],
      ['other', 'other', 2],
    ])
    expect(family.cell('f', 200)).toBe(family.cell('g', 500))
  })

  test('histograms count each observation in its bucket and report cumulative buckets', async () => {
    const family = new HistogramCells('test_seconds', 'A test histogram.', ['route'], [0.1, 1])

    for (const seconds of [0.05, 0.1, 0.5, 3]) family.cell('/x').observe(seconds)
    const values = (await family.get()).values.map(({ metricName, labels, value }) => `${metricName}${labels.le === undefined ? '' : ` le=${labels.le}`} ${value}`)

    expect(values).toEqual(['test_seconds_bucket le=0.1 2', 'test_seconds_bucket le=1 3', 'test_seconds_bucket le=+Inf 4', 'test_seconds_sum 3.65', 'test_seconds_count 4'])
  })
})
