/** One upstream that can serve a catalog model. */
export interface Deployment {
  id: string
  provider: 'simulator' | 'openai-compatible'
  /** Base URL of an OpenAI-compatible upstream, ending in /v1. */
  baseUrl: string | null
  /** The model name the upstream knows; defaults to the catalog id. */
  upstreamModel: string
  region: string
  weight: number
  /** Name of the environment variable holding the upstream's API key; the secret itself is never stored. */
  apiKeyEnv: string | null
  timeouts: { connectMs: number; firstTokenMs: number; idleMs: number; totalMs: number }
  /** Pacing of the simulator provider. */
  simulator: { ttftMs: number; interTokenMs: number }
}

/** A model of the catalog, with integer prices in micro-EGP per 1,000,000 tokens. */
export interface CatalogModel {
  id: string
  ownedBy: string
  /** Unix seconds. */
  created: number
  status: 'live' | 'retired'
  modality: 'chat' | 'embeddings'
  contextWindow: number
  maxOutputTokens: number
  region: string
  weights: string
  /** ISO date, YYYY-MM-DD. */
  published: string
  inputPriceMicrosPerM: bigint
  outputPriceMicrosPerM: bigint
  pricesAreSamples: boolean
  /** Vector size of an embeddings model. */
  embeddingDimensions: number | null
  /** Whether an embeddings model accepts `dimensions` (shortened vectors). */
  supportsDimensions: boolean
  /** ISO date of retirement, for retired models or scheduled retirements. */
  retiresOn: string | null
  replacement: string | null
  deployments: Deployment[]
}

/** The catalog, indexed by model id. */
export class Catalog {
  private readonly byId: Map<string, CatalogModel>

  constructor(readonly models: readonly CatalogModel[]) {
    this.byId = new Map(models.map((model) => [model.id, model]))
  }

  find(id: string): CatalogModel | undefined {
    return this.byId.get(id)
  }
}
