import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { Value } from '@sinclair/typebox/value'
import type { ChangeBus } from './core/governance/changes'
import { parseEgp } from './core/money'
import {
  defaultRoutingSettings,
  defaultTimeouts,
  isCalendarDate,
  normalizeBaseUrl,
  type Catalog,
  type CatalogFileContents,
  type CatalogModel,
  type CircuitSettings,
  type Deployment,
} from './core/catalog'

// Every object refuses keys it does not know: a misspelt setting (`timeout_ms`) would otherwise be
// dropped without a word and its default used. The descriptions are what editors show from
// docs/catalog.schema.json, which is this schema written out (`catalogJsonSchema`).
const strict = { additionalProperties: false }

const egp = (description: string) => t.String({ pattern: '^\\d+(\\.\\d{1,6})?$', description })

const positiveInteger = (description: string) => Type.Integer({ minimum: 1, description })

const Circuit = t.Object(
  {
    failures: t.Optional(positiveInteger('Failures in a row that open the circuit (default 5).')),
    cooldown_ms: t.Optional(positiveInteger('How long an open circuit skips the deployment before one request tries it again (default 30000).')),
  },
  { ...strict, description: 'When a deployment is taken out after failures, and for how long.' },
)

const DeploymentEntry = t.Object(
  {
    id: t.Optional(t.String({ minLength: 1, description: 'Unique in the file; its health is kept across reloads. Default: the model id and the position, `model#0`.' })),
    provider: t.Union([t.Literal('simulator'), t.Literal('openai-compatible')], { description: '`openai-compatible` for any upstream speaking the OpenAI wire format (vLLM, SGLang, TGI, llama.cpp, Ollama, hosted APIs); `simulator` for the built-in one.' }),
    base_url: t.Optional(t.String({ description: 'The upstream\'s base URL, up to `/v1` (http or https, no credentials, query or fragment); required for openai-compatible.' })),
    upstream_model: t.Optional(t.String({ description: 'The model name the upstream knows (default: the model id).' })),
    region: t.Optional(t.String({ description: 'Where the deployment runs, for organizations that require a region (default: the model\'s region).' })),
    weight: t.Optional(positiveInteger('Share of the requests relative to the other deployments (default 1).')),
    max_concurrent: t.Optional(positiveInteger('Requests in flight at most on this deployment; past it, another one or 503 engine_unavailable (default: unlimited).')),
    api_key_env: t.Optional(t.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$', description: 'The environment variable that holds the upstream\'s API key (the key itself is never in the file).' })),
    developer_role: t.Optional(t.Union([t.Literal('developer'), t.Literal('system')], { description: '`system` sends `developer` messages as `system`, for upstreams whose chat template drops roles it does not know (default `developer`).' })),
    timeouts_ms: t.Optional(
      t.Object(
        {
          connect: t.Optional(positiveInteger('Until the upstream answers with its headers; also the limit of each health probe (default 5000).')),
          first_token: t.Optional(positiveInteger('From the request to the first chunk of a stream (default 60000).')),
          idle: t.Optional(positiveInteger('Between two chunks of a stream (default 60000).')),
          total: t.Optional(positiveInteger('The whole call (default 600000).')),
        },
        { ...strict, description: 'Deadlines of an upstream call, in milliseconds.' },
      ),
    ),
    circuit: t.Optional(Circuit),
    simulator: t.Optional(
      t.Object(
        {
          ttft_ms: t.Optional(Type.Integer({ minimum: 0, description: 'Delay before the first token (default 0).' })),
          inter_token_ms: t.Optional(Type.Integer({ minimum: 0, description: 'Delay between tokens (default 0).' })),
        },
        { ...strict, description: 'Pace of the simulator\'s answers.' },
      ),
    ),
  },
  { ...strict, description: 'Where the model is served: the simulator, or an OpenAI-compatible upstream.' },
)

const calendarDate = (description: string) => t.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description })

const ModelEntry = t.Object(
  {
    // Requests name a model in at most 256 characters.
    id: t.String({ minLength: 1, maxLength: 256, description: 'The name clients send as `model`; may contain `/`.' }),
    owned_by: t.String({ description: 'Who provides the model, shown in `GET /v1/models`.' }),
    status: t.Optional(t.Union([t.Literal('live'), t.Literal('retired')], { description: '`retired` retires the model at once (default `live`).' })),
    modality: t.Union([t.Literal('chat'), t.Literal('embeddings')], { description: 'The endpoint that serves it.' }),
    context_window: positiveInteger('Tokens of prompt and output together.'),
    max_output_tokens: Type.Integer({ minimum: 0, description: 'Output tokens of a request that sets no `max_tokens`: what it is held for, and the `max_tokens` sent upstream.' }),
    region: t.String({ description: 'Where the model runs, for organizations that require a region (`EG`, `EU`).' }),
    weights: t.String({ description: 'Shown in the catalog, such as `Open weights`.' }),
    published: calendarDate('The release date, YYYY-MM-DD; the `created` of `GET /v1/models`.'),
    input_price_egp: egp('EGP per 1,000,000 prompt tokens, a decimal string with up to 6 decimals.'),
    output_price_egp: egp('EGP per 1,000,000 output tokens, a decimal string with up to 6 decimals.'),
    prices_are_samples: t.Optional(t.Boolean({ description: 'Marks the prices as illustrative samples rather than a price list (default false).' })),
    embedding_dimensions: t.Optional(positiveInteger('Length of the embedding vectors.')),
    supports_dimensions: t.Optional(t.Boolean({ description: 'Whether requests may ask for fewer `dimensions` (default false).' })),
    retires_on: t.Optional(calendarDate('The retirement date, YYYY-MM-DD: until then answers carry Deprecation and Sunset, from 00:00 UTC 403 model_sunset.')),
    replacement: t.Optional(t.String({ description: 'The model to use instead once it retires.' })),
    deployments: t.Array(DeploymentEntry, { description: 'At least one for a live model; requests go to the least loaded healthy one for its weight.' }),
  },
  { ...strict, description: 'A model of the catalog.' },
)

/**
 * The file named by NILEGATE_CONFIG (snake_case JSON): catalog entries and their deployments, the
 * circuit settings of deployments that set none, and how often deployments are probed.
 */
export const CatalogFile = t.Object(
  {
    $schema: t.Optional(t.String({ description: 'This file\'s JSON Schema, for editors (docs/catalog.schema.json); the gateway ignores it.' })),
    circuit: t.Optional(Circuit),
    health_probes: t.Optional(
      t.Object(
        { interval_ms: t.Optional(Type.Integer({ minimum: 0, description: 'Milliseconds between probes of each openai-compatible deployment, ±20%; 0 never probes (default 10000).' })) },
        { ...strict, description: 'Active health checks: GET {base_url}/models with the deployment\'s key.' },
      ),
    ),
    models: t.Array(ModelEntry, { description: 'The models the gateway serves.' }),
  },
  { ...strict, title: 'nilegate catalog file', description: 'Models, prices and deployments of a nilegate gateway (NILEGATE_CONFIG).' },
)
export type CatalogFile = typeof CatalogFile.static

/**
 * The catalog file's JSON Schema (draft-07) as docs/catalog.schema.json holds it, for editors and
 * other tools: the very schema the gateway validates files with, as plain JSON.
 */
export function catalogJsonSchema(): Record<string, unknown> {
  return { $schema: 'http://json-schema.org/draft-07/schema#', ...JSON.parse(JSON.stringify(CatalogFile)) }
}

function circuitOf(entry: typeof Circuit.static | undefined, fallback: CircuitSettings): CircuitSettings {
  return { failures: entry?.failures ?? fallback.failures, cooldownMs: entry?.cooldown_ms ?? fallback.cooldownMs }
}

function toDeployment(entry: typeof DeploymentEntry.static, model: typeof ModelEntry.static, index: number, circuit: CircuitSettings): Deployment {
  if (entry.provider === 'openai-compatible' && !entry.base_url) throw new Error('an openai-compatible deployment needs base_url')
  return {
    id: entry.id ?? `${model.id}#${index}`,
    provider: entry.provider,
    baseUrl: entry.base_url === undefined ? null : normalizeBaseUrl(entry.base_url),
    upstreamModel: entry.upstream_model ?? model.id,
    region: entry.region ?? model.region,
    weight: entry.weight ?? 1,
    maxConcurrent: entry.max_concurrent ?? null,
    apiKeyEnv: entry.api_key_env ?? null,
    developerRole: entry.developer_role ?? 'developer',
    timeouts: {
      connectMs: entry.timeouts_ms?.connect ?? defaultTimeouts.connectMs,
      firstTokenMs: entry.timeouts_ms?.first_token ?? defaultTimeouts.firstTokenMs,
      idleMs: entry.timeouts_ms?.idle ?? defaultTimeouts.idleMs,
      totalMs: entry.timeouts_ms?.total ?? defaultTimeouts.totalMs,
    },
    circuit: circuitOf(entry.circuit, circuit),
    simulator: { ttftMs: entry.simulator?.ttft_ms ?? 0, interTokenMs: entry.simulator?.inter_token_ms ?? 0 },
  }
}

/**
 * Validates a parsed catalog file and turns it into catalog models and settings; throws with the
 * first problem and where it is, never with the offending value (the file is logged on reload).
 */
export function parseCatalogContents(json: unknown): CatalogFileContents {
  const problem = Value.Errors(CatalogFile, json).First()
  if (problem) throw new Error(`${problem.path || '/'}: ${problem.message}`)
  const file = json as CatalogFile
  const settings = { circuit: circuitOf(file.circuit, defaultRoutingSettings.circuit), probeIntervalMs: file.health_probes?.interval_ms ?? defaultRoutingSettings.probeIntervalMs }
  const seenModels = new Set<string>()
  // Health is kept per deployment id, across models and reloads: ids must be unique in the file.
  const seenDeployments = new Set<string>()
  const models = file.models.map((entry): CatalogModel => {
    if (seenModels.has(entry.id)) throw new Error(`model ${entry.id} is listed twice`)
    seenModels.add(entry.id)
    const status = entry.status ?? 'live'
    if (status === 'live' && entry.deployments.length === 0) throw new Error(`model ${entry.id}: a live model needs a deployment`)
    // The date retires the model at its instant: one that names no day would never come.
    if (entry.retires_on !== undefined && !isCalendarDate(entry.retires_on)) throw new Error(`model ${entry.id}: retires_on ${entry.retires_on} is not a date of the calendar`)
    const deployments = entry.deployments.map((deployment, index) => {
      try {
        return toDeployment(deployment, entry, index, settings.circuit)
      } catch (error) {
        throw new Error(`model ${entry.id}, deployment ${index}: ${(error as Error).message}`)
      }
    })
    for (const { id } of deployments) {
      if (seenDeployments.has(id)) throw new Error(`model ${entry.id}: the deployment id ${id} is used twice`)
      seenDeployments.add(id)
    }
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
      deployments,
    }
  })
  return { models, settings }
}

/** The models of a parsed catalog file. */
export function parseCatalogFile(json: unknown): CatalogModel[] {
  return [...parseCatalogContents(json).models]
}

/** The catalog the gateway serves when NILEGATE_CONFIG names none. */
export const demoCatalogPath = new URL('./demo-catalog.json', import.meta.url).pathname

/** Reads and parses the catalog file at a path; the error names the path and the first problem. */
export async function readCatalogFile(path: string): Promise<CatalogFileContents> {
  try {
    return parseCatalogContents(JSON.parse(await Bun.file(path).text()))
  } catch (error) {
    throw new Error(`${path}: ${(error as Error).message}`)
  }
}

/** The models of the catalog file at a path. */
export async function loadCatalogFile(path: string): Promise<CatalogModel[]> {
  return [...(await readCatalogFile(path)).models]
}

/**
 * Re-reads the catalog file into `catalog` (SIGHUP, or an operator's reload). A file that cannot be
 * read or parsed changes nothing: the gateway keeps the catalog it has and logs why. Requests in
 * flight keep the models they resolved; the router keeps the health of deployments whose id stays.
 */
export async function reloadCatalogFile(catalog: Catalog, path: string, log: Pick<Console, 'log' | 'error'> = console): Promise<boolean> {
  let contents: CatalogFileContents
  try {
    contents = await readCatalogFile(path)
  } catch (error) {
    log.error(`the catalog was not reloaded and stays as it was: ${(error as Error).message}`)
    return false
  }
  catalog.replaceFile(contents)
  const deployments = contents.models.reduce((sum, model) => sum + model.deployments.length, 0)
  log.log(`catalog reloaded from ${path}: ${contents.models.length} models, ${deployments} deployments in the file`)
  return true
}

/**
 * Reloads the catalog file when `reload` is called (SIGHUP) and whenever an operator asks any
 * instance to (`POST /v1/admin/catalog/reload`, on the change bus), one reload at a time, so an
 * older read never lands over a newer one. Returns `reload` and how to stop listening.
 */
export function followCatalogFile(catalog: Catalog, path: string, changes: ChangeBus): { reload: () => Promise<boolean>; stop: () => void } {
  let latest: Promise<boolean> = Promise.resolve(true)
  const reload = () => (latest = latest.then(() => reloadCatalogFile(catalog, path)))
  const stop = changes.subscribe((change) => {
    if (change.kind === 'catalog_file') void reload()
  })
  return { reload, stop }
}
