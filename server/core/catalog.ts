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

/** An operator's decision to retire a model (stored in the database, applied over the catalog file). */
export interface ModelRetirement {
  modelId: string
  /** ISO date, YYYY-MM-DD: the model answers model_sunset from 00:00 UTC of that day. */
  retiresOn: string
  /** A live model of the same modality to use instead, or null. */
  replacement: string | null
}

/** One model's two faces: as it is before its retirement instant, and from then on. */
interface CatalogEntry {
  current: CatalogModel
  /** Unix milliseconds from which `retired` is served instead of `current`; null when never. */
  retiresAtMs: number | null
  retired: CatalogModel | null
}

/** Unix milliseconds of 00:00 UTC on an ISO date (the catalog reads `published` the same way). */
export function retirementInstantMs(isoDate: string): number {
  return Date.parse(`${isoDate}T00:00:00Z`)
}

/**
 * The catalog, indexed by model id: the models of the catalog file, with the operators' stored
 * retirements applied over them. A retirement dated in the future leaves the model live (showing its
 * shutdown date and replacement) and retires it from 00:00 UTC of that date: each lookup compares
 * the clock with the precomputed instant, so nothing has to run at midnight. The file's own
 * `retired` status is final (such a model may have no deployment left); stored retirements set the
 * date and replacement of every other model.
 */
export class Catalog {
  private readonly fileModels: readonly CatalogModel[]
  private entries: Map<string, CatalogEntry>

  constructor(models: readonly CatalogModel[]) {
    this.fileModels = models
    this.entries = buildEntries(models, [])
  }

  /** Every model as it stands now, in the file's order. */
  get models(): CatalogModel[] {
    const nowMs = Date.now()
    return Array.from(this.entries.values(), (entry) => viewAt(entry, nowMs))
  }

  find(id: string): CatalogModel | undefined {
    const entry = this.entries.get(id)
    return entry && viewAt(entry, Date.now())
  }

  /** Whether the catalog file itself retired the model: stored retirements do not apply to it. */
  isRetiredByFile(id: string): boolean {
    return this.fileModels.some((model) => model.id === id && model.status === 'retired')
  }

  /**
   * Replaces the applied retirements with `retirements` (every stored one, not a change): models
   * they do not name return to the file's status. Names of models the file lacks are ignored.
   */
  applyRetirements(retirements: readonly ModelRetirement[]): void {
    this.entries = buildEntries(this.fileModels, retirements)
  }
}

function viewAt(entry: CatalogEntry, nowMs: number): CatalogModel {
  return entry.retiresAtMs !== null && nowMs >= entry.retiresAtMs ? entry.retired! : entry.current
}

function buildEntries(models: readonly CatalogModel[], retirements: readonly ModelRetirement[]): Map<string, CatalogEntry> {
  const byModel = new Map(retirements.map((retirement) => [retirement.modelId, retirement]))
  return new Map(
    models.map((model): [string, CatalogEntry] => {
      const retirement = byModel.get(model.id)
      if (!retirement || model.status === 'retired') return [model.id, { current: model, retiresAtMs: null, retired: null }]
      const scheduled: CatalogModel = { ...model, retiresOn: retirement.retiresOn, replacement: retirement.replacement }
      return [model.id, { current: scheduled, retiresAtMs: retirementInstantMs(retirement.retiresOn), retired: { ...scheduled, status: 'retired' } }]
    }),
  )
}
