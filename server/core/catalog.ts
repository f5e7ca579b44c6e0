/** When a deployment's circuit opens, and for how long. */
export interface CircuitSettings {
  /** Consecutive failed calls that open the circuit. */
  failures: number
  /** How long an open circuit refuses traffic before it lets one trial request through. */
  cooldownMs: number
}

/** The roles `developer` messages can reach an upstream as. */
export type DeveloperRole = 'developer' | 'system'

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
  /** Requests the router sends it at once, at most; null for no limit. */
  maxConcurrent: number | null
  /** Name of the environment variable holding the upstream's API key; the secret itself is never stored. */
  apiKeyEnv: string | null
  /**
   * The role `developer` messages are sent upstream as: `developer` as they came (an upstream that
   * refuses the role gets them again as `system`), or `system` from the first try, for chat
   * templates that drop a role they do not know without refusing it.
   */
  developerRole: DeveloperRole
  timeouts: { connectMs: number; firstTokenMs: number; idleMs: number; totalMs: number }
  circuit: CircuitSettings
  /** Pacing of the simulator provider. */
  simulator: { ttftMs: number; interTokenMs: number }
}

/** The deadlines of a deployment that names none. */
export const defaultTimeouts: Deployment['timeouts'] = { connectMs: 5_000, firstTokenMs: 60_000, idleMs: 60_000, totalMs: 600_000 }

/**
 * How long a request to `model` may run at most: every deployment tried in turn (a failover), each
 * to its total deadline.
 */
export function longestRequestMs(model: Pick<CatalogModel, 'deployments'>): number {
  let total = 0
  for (const deployment of model.deployments) total += deployment.timeouts.totalMs
  return total
}

/** Settings of the catalog file that hold for every deployment. */
export interface RoutingSettings {
  /** The circuit of deployments that set none of their own, stored deployments included. */
  circuit: CircuitSettings
  /** Mean time between two active health probes of an openai-compatible deployment; 0 turns them off. */
  probeIntervalMs: number
}

export const defaultRoutingSettings: RoutingSettings = { circuit: { failures: 5, cooldownMs: 30_000 }, probeIntervalMs: 10_000 }

/**
 * A deployment an operator stored in the database (the operator API): it joins its model's
 * deployments from the catalog file, with the file's catalog-wide circuit settings.
 */
export interface StoredDeployment {
  id: string
  modelId: string
  provider: Deployment['provider']
  baseUrl: string | null
  upstreamModel: string
  region: string
  weight: number
  maxConcurrent: number | null
  timeouts: Deployment['timeouts']
  apiKeyEnv: string | null
  developerRole: DeveloperRole
  /** Unix seconds. */
  createdAt: number
}

/**
 * A deployment's base URL without trailing slashes. Throws unless it is an http(s) URL without
 * credentials: an upstream's secret is named by `api_key_env`, never written into a URL that is
 * stored, shown and logged.
 */
export function normalizeBaseUrl(text: string): string {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new Error('base_url must be an absolute http(s) URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`base_url must be an http or https URL; got a ${url.protocol} URL`)
  if (url.username !== '' || url.password !== '') throw new Error('base_url must not carry credentials; name the environment variable holding the key in api_key_env')
  if (url.search !== '' || url.hash !== '') throw new Error('base_url must not have a query or fragment')
  return text.replace(/\/+$/, '')
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

/** Whether `isoDate` (YYYY-MM-DD) names a day of the calendar: 2025-02-30 does not. */
export function isCalendarDate(isoDate: string): boolean {
  const instant = retirementInstantMs(isoDate)
  return Number.isFinite(instant) && new Date(instant).toISOString().slice(0, 10) === isoDate
}

/** What the catalog file holds: its models with their deployments, and its routing settings. */
export interface CatalogFileContents {
  models: readonly CatalogModel[]
  settings: RoutingSettings
}

/**
 * The catalog, indexed by model id: the models of the catalog file, with the deployments and
 * retirements operators stored in the database applied over them. A retirement, the file's
 * `retires_on` or an operator's, dated in the future leaves the model live (showing its shutdown
 * date and replacement) and retires it from 00:00 UTC of that date: each lookup compares the clock
 * with the precomputed instant, so nothing has to run at midnight. The file's own `retired` status
 * is final (such a model may have no deployment left); stored retirements set the date and
 * replacement of every other model, in place of the file's.
 *
 * A change (a reloaded file, stored deployments, retirements) replaces model objects and never
 * mutates one: a request keeps the model it resolved, with its deployments, however the catalog
 * changes while it runs.
 */
export class Catalog {
  private file: CatalogFileContents
  private retirements: readonly ModelRetirement[] = []
  private stored: readonly StoredDeployment[] = []
  private entries: Map<string, CatalogEntry>

  constructor(models: readonly CatalogModel[], settings: RoutingSettings = defaultRoutingSettings) {
    this.file = { models, settings }
    this.entries = this.buildEntries()
  }

  get settings(): RoutingSettings {
    return this.file.settings
  }

  /** Every model as it stands now, in the file's order. */
  get models(): CatalogModel[] {
    const nowMs = Date.now()
    return Array.from(this.entries.values(), (entry) => viewAt(entry, nowMs))
  }

  /** The longest any request to a model of the catalog, retired ones included, may run (`longestRequestMs`). */
  get longestRequestMs(): number {
    let longest = 0
    for (const entry of this.entries.values()) longest = Math.max(longest, longestRequestMs(entry.current))
    return longest
  }

  find(id: string): CatalogModel | undefined {
    const entry = this.entries.get(id)
    return entry && viewAt(entry, Date.now())
  }

  /** The deployments of the live models: what traffic may reach, and so what health probes watch. */
  get liveDeployments(): Deployment[] {
    return this.models.filter((model) => model.status === 'live').flatMap((model) => model.deployments)
  }

  /** The stored deployment with this id (one added through the operator API), if any. */
  storedDeployment(id: string): StoredDeployment | undefined {
    return this.stored.find((deployment) => deployment.id === id)
  }

  /** Whether the catalog file itself retired the model: stored retirements do not apply to it. */
  isRetiredByFile(id: string): boolean {
    return this.file.models.some((model) => model.id === id && model.status === 'retired')
  }

  /** Replaces the catalog file's models and settings (a reload); stored changes apply over the new file. */
  replaceFile(contents: CatalogFileContents): void {
    this.file = contents
    this.entries = this.buildEntries()
  }

  /**
   * Replaces the applied retirements with `retirements` (every stored one, not a change): models
   * they do not name return to the file's status. Names of models the file lacks are ignored.
   */
  applyRetirements(retirements: readonly ModelRetirement[]): void {
    this.retirements = retirements
    this.entries = this.buildEntries()
  }

  /**
   * Replaces the stored deployments with `deployments` (every stored one): each joins the
   * deployments of its model. Those of models the file lacks or retired are ignored.
   */
  applyDeployments(deployments: readonly StoredDeployment[]): void {
    this.stored = deployments
    this.entries = this.buildEntries()
  }

  private buildEntries(): Map<string, CatalogEntry> {
    const retirements = new Map(this.retirements.map((retirement) => [retirement.modelId, retirement]))
    const storedByModel = new Map<string, Deployment[]>()
    for (const stored of this.stored) storedByModel.set(stored.modelId, [...(storedByModel.get(stored.modelId) ?? []), toDeployment(stored, this.file.settings)])
    return new Map(
      this.file.models.map((fileModel): [string, CatalogEntry] => {
        const stored = fileModel.status === 'retired' ? undefined : storedByModel.get(fileModel.id)
        const model = stored ? { ...fileModel, deployments: [...fileModel.deployments, ...stored] } : fileModel
        // A stored retirement takes the place of the file's date; either retires the model at its instant.
        const retirement = retirements.get(model.id) ?? (model.retiresOn === null ? undefined : { modelId: model.id, retiresOn: model.retiresOn, replacement: model.replacement })
        if (!retirement || model.status === 'retired') return [model.id, { current: model, retiresAtMs: null, retired: null }]
        const scheduled: CatalogModel = { ...model, retiresOn: retirement.retiresOn, replacement: retirement.replacement }
        return [model.id, { current: scheduled, retiresAtMs: retirementInstantMs(retirement.retiresOn), retired: { ...scheduled, status: 'retired' } }]
      }),
    )
  }
}

function toDeployment(stored: StoredDeployment, settings: RoutingSettings): Deployment {
  const { modelId: _modelId, createdAt: _createdAt, ...deployment } = stored
  return { ...deployment, circuit: settings.circuit, simulator: { ttftMs: 0, interTokenMs: 0 } }
}

function viewAt(entry: CatalogEntry, nowMs: number): CatalogModel {
  return entry.retiresAtMs !== null && nowMs >= entry.retiresAtMs ? entry.retired! : entry.current
}
