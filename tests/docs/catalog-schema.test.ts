import { describe, expect, test } from 'bun:test'
import Ajv from 'ajv'
import { catalogJsonSchema, demoCatalogPath, parseCatalogContents } from '../../server/catalog-file'
import { catalogFileModel } from '../support/catalog-file-model'

const schemaPath = new URL('../../docs/catalog.schema.json', import.meta.url).pathname
const regenerate = `bun -e 'import { catalogJsonSchema } from "./server/catalog-file"; await Bun.write("docs/catalog.schema.json", JSON.stringify(catalogJsonSchema(), null, 2) + "\\n")'`

/** Whether the gateway takes a catalog file; its message when it does not. */
function gatewayVerdict(file: unknown): true | string {
  try {
    parseCatalogContents(file)
    return true
  } catch (error) {
    return (error as Error).message
  }
}

const file = (model: Record<string, unknown> = {}, top: Record<string, unknown> = {}) => ({ ...top, models: [catalogFileModel({ id: 'nile/test-chat', ...model })] })
const upstream = { provider: 'openai-compatible', base_url: 'http://vllm:8000/v1' }

describe('docs/catalog.schema.json', () => {
  test(`is the schema the gateway validates catalog files with (if not, regenerate it: ${regenerate})`, async () => {
    expect(await Bun.file(schemaPath).json()).toEqual(catalogJsonSchema())
  })

  test('is a draft-07 JSON Schema that the demo catalog, which names it in $schema, satisfies', async () => {
    const demo = await Bun.file(demoCatalogPath).json()
    const validate = new Ajv({ allErrors: true }).compile(await Bun.file(schemaPath).json())

    expect(demo.$schema).toBe('../docs/catalog.schema.json')
    expect(validate(demo)).toBe(true)
    expect(gatewayVerdict(demo)).toBe(true)
  })

  // Ajv stands for an editor: what it accepts, the gateway accepts, and what it refuses, the gateway
  // refuses on the same path (checks beyond a schema, such as unique ids, are the gateway's alone).
  test.each([
    ['a minimal file', file(), true],
    ['every setting', file({ status: 'live', retires_on: '2030-01-01', replacement: 'nile/next', deployments: [{ ...upstream, id: 'a', upstream_model: 'm', region: 'EU', weight: 2, max_concurrent: 8, api_key_env: 'VLLM_KEY', developer_role: 'system', timeouts_ms: { connect: 1, first_token: 2, idle: 3, total: 4 }, circuit: { failures: 1, cooldown_ms: 1 } }] }, { circuit: { failures: 2 }, health_probes: { interval_ms: 0 } }), true],
    ['a misspelt deployment setting', file({ deployments: [{ ...upstream, timeout_ms: { total: 5 } }] }), '/models/0/deployments/0/timeout_ms'],
    ['an unknown top-level key', file({}, { circuits: {} }), '/circuits'],
    ['an unknown model key', file({ price_egp: '1' }), '/models/0/price_egp'],
    ['a price with 7 decimals', file({ input_price_egp: '1.0000001' }), '/models/0/input_price_egp'],
    ['an unknown provider', file({ deployments: [{ provider: 'bedrock' }] }), '/models/0/deployments/0/provider'],
    ['a fractional weight', file({ deployments: [{ ...upstream, weight: 1.5 }] }), '/models/0/deployments/0/weight'],
    ['a model without prices', (({ input_price_egp, ...model }) => ({ models: [model] }))(catalogFileModel({ id: 'm' })), '/models/0/input_price_egp'],
  ])('%s: editors and the gateway agree', (_name, candidate, verdict) => {
    const validate = new Ajv({ allErrors: true }).compile(catalogJsonSchema())

    const editorSays = validate(candidate)
    const gatewaySays = gatewayVerdict(candidate)

    expect(editorSays).toBe(verdict === true)
    if (verdict === true) expect(gatewaySays).toBe(true)
    else expect(String(gatewaySays)).toStartWith(`${verdict}: `)
  })
})

describe('the examples of docs/catalog.md', async () => {
  const page = await Bun.file(new URL('../../docs/catalog.md', import.meta.url).pathname).text()
  const examples = [...page.matchAll(/^```json\n([\s\S]*?)^```$/gm)].map((match) => JSON.parse(match[1]!) as Record<string, unknown>)
  const wholeFile = examples.find((example) => 'models' in example)!
  const deployment = examples.find((example) => 'provider' in example)!

  test('a whole catalog file the gateway takes', () => {
    expect(gatewayVerdict(wholeFile)).toBe(true)
  })

  test('a deployment whose developer_role, timeouts and circuit are the defaults, as the page says', () => {
    const [written] = parseCatalogContents(file({ deployments: [deployment] })).models[0]!.deployments
    const { developer_role, timeouts_ms, circuit, ...rest } = deployment
    const [defaulted] = parseCatalogContents(file({ deployments: [rest] })).models[0]!.deployments

    expect(written).toEqual(defaulted!)
  })
})
