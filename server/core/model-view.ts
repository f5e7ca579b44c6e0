import type { ModelObject } from '@nilegate/shared/schemas/models'
import type { CatalogModel } from './catalog'
import { formatEgp, monthlyCostExampleMicros } from './money'

const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']

/** "2024-12-06" as the catalog shows it: "6 Dec 2024". */
export function formatPublished(isoDate: string): string {
  const [year, month, day] = isoDate.split('-').map(Number)
  return `${day} ${months[month! - 1]} ${year}`
}

/** A context window as a rounded figure in thousands: 131072 -> "128K", 200000 -> "200K". */
export function formatContextWindow(tokens: number): string {
  return tokens % 1024 === 0 ? `${tokens / 1024}K` : `${Math.round(tokens / 1000)}K`
}

/** The API view of a catalog model. */
export function toModelObject(model: CatalogModel): ModelObject {
  const view: ModelObject = {
    id: model.id,
    object: 'model',
    created: model.created,
    owned_by: model.ownedBy,
    status: model.status === 'live' ? 'Live' : 'Retired',
    modality: model.modality === 'chat' ? 'Chat' : 'Embeddings',
    context_window: model.contextWindow,
    context_window_label: formatContextWindow(model.contextWindow),
    max_output_tokens: model.maxOutputTokens,
    region: model.region,
    weights: model.weights,
    published: formatPublished(model.published),
    input_price_egp_per_1m: formatEgp(model.inputPriceMicrosPerM),
    output_price_egp_per_1m: formatEgp(model.outputPriceMicrosPerM),
    monthly_cost_example_egp: formatEgp(monthlyCostExampleMicros(model.inputPriceMicrosPerM, model.outputPriceMicrosPerM)),
    prices_are_samples: model.pricesAreSamples,
    shutdown_date: model.retiresOn,
    replacement: model.replacement,
  }
  if (model.embeddingDimensions !== null) view.embedding_dimensions = model.embeddingDimensions
  return view
}
