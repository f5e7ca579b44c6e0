import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { Value } from '@sinclair/typebox/value'
import { parseEgp } from './core/money'
import type { CatalogModel, Deployment } from './core/catalog'

const egp = t.String({ pattern: '^\\d+(\\.\\d{1,6})?$' })

const DeploymentEntry = t.Object({
  id: t.Optional(t.String()),
  provider: t.Union([t.Literal('simulator'), t.Literal('openai-compatible')]),
  base_url: t.Optional(t.String()),
  upstream_model: t.Optional(t.String()),
  region: t.Optional(t.String()),
  weight: t.Optional(Type.Integer({ minimum: 1 })),
  api_key_env: t.Optional(t.String()),
  timeouts_ms: t.Optional(
    t.Object({
      connect: t.Optional(Type.Integer({ minimum: 1 })),
      first_token: t.Optional(Type.Integer({ minimum: 1 })),
      idle: t.Optional(Type.Integer({ minimum: 1 })),
      total: t.Optional(Type.Integer({ minimum: 1 })),
    }),
  ),
  simulator: t.Optional(t.Object({ ttft_ms: t.Optional(Type.Integer({ minimum: 0 })), inter_token_ms: t.Optional(Type.Integer({ minimum: 0 })) })),
})

const ModelEntry = t.Object({
  id: t.String({ minLength: 1 }),
  owned_by: t.String(),
  status: t.Optional(t.Union([t.Literal('live'), t.Literal('retired')])),
  modality: t.Union([t.Literal('chat'), t.Literal('embeddings')]),
  context_window: Type.Integer({ minimum: 1 }),
  max_output_tokens: Type.Integer({ minimum: 0 }),
  region: t.String(),
  weights: t.String(),
  published: t.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$' }),
  input_price_egp: egp,
  output_price_egp: egp,
  prices_are_samples: t.Optional(t.Boolean()),
  embedding_dimensions: t.Optional(Type.Integer({ minimum: 1 })),
  supports_dimensions: t.Optional(t.Boolean()),
  retires_on: t.Optional(t.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$' })),
  replacement: t.Optional(t.String()),
  deployments: t.Array(DeploymentEntry),
})

/** The file named by NILEGATE_CONFIG: catalog entries and their deployments (snake_case JSON). */
export const CatalogFile = t.Object({ models: t.Array(ModelEntry) })
export type CatalogFile = typeof CatalogFile.static

function toDeployment(entry: typeof DeploymentEntry.static, model: typeof ModelEntry.static, index: number): Deployment {
  if (entry.provider === 'openai-compatible' && !entry.base_url) {
    throw new Error(`model ${model.id}: an openai-compatible deployment needs base_url`)
  }
  return {
    id: entry.id ?? `${model.id}#${index}`,
    provider: entry.provider,
    baseUrl: entry.base_url?.replace(/\/+$/, '') ?? null,
    upstreamModel: entry.upstream_model ?? model.id,
    region: entry.region ?? model.region,
    weight: entry.weight ?? 1,
    apiKeyEnv: entry.api_key_env ?? null,
    timeouts: {
      connectMs: entry.timeouts_ms?.connect ?? 5_000,
      firstTokenMs: entry.timeouts_ms?.first_token ?? 60_000,
      idleMs: entry.timeouts_ms?.idle ?? 60_000,
      totalMs: entry.timeouts_ms?.total ?? 600_000,
    },
    simulator: { ttftMs: entry.simulator?.ttft_ms ?? 0, interTokenMs: entry.simulator?.inter_token_ms ?? 0 },
  }
}

/** Validates a parsed catalog file and turns it into catalog models; throws with the first problem. */
export function parseCatalogFile(json: unknown): CatalogModel[] {
  const file = Value.Parse(CatalogFile, json)
  const seen = new Set<string>()
  return file.models.map((entry) => {
    if (seen.has(entry.id)) throw new Error(`model ${entry.id} is listed twice`)
    seen.add(entry.id)
    const status = entry.status ?? 'live'
    if (status === 'live' && entry.deployments.length === 0) throw new Error(`model ${entry.id}: a live model needs a deployment`)
    return {
      id: entry.id,
      ownedBy: entry.owned_by,
      created: Math.floor(Date.parse(`${entry.published}T00:00:00Z`) / 1000),
      status,
      modality: entry.modality,
      contextWindow: entry.context_window,
      maxOutputTokens: entry.max_output_tokens,
      region: entry.region,
      weights: entry.weights,
      published: entry.published,
      inputPriceMicrosPerM: parseEgp(entry.input_price_egp),
      outputPriceMicrosPerM: parseEgp(entry.output_price_egp),
      pricesAreSamples: entry.prices_are_samples ?? false,
      embeddingDimensions: entry.embedding_dimensions ?? null,
      supportsDimensions: entry.supports_dimensions ?? false,
      retiresOn: entry.retires_on ?? null,
      replacement: entry.replacement ?? null,
      deployments: entry.deployments.map((deployment, index) => toDeployment(deployment, entry, index)),
    }
  })
}

/** Reads and parses the catalog file at a path. */
export async function loadCatalogFile(path: string): Promise<CatalogModel[]> {
  const text = await Bun.file(path).text()
  try {
    return parseCatalogFile(JSON.parse(text))
  } catch (error) {
    throw new Error(`${path}: ${(error as Error).message}`)
  }
}
