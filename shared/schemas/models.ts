/** A catalog model as GET /v1/models shows it: the OpenAI model shape plus the catalog's attributes. */
export interface ModelObject {
  id: string
  object: 'model'
  created: number
  owned_by: string
  status: 'Live' | 'Retired'
  modality: 'Chat' | 'Embeddings'
  context_window: number
  /** The context window rounded to thousands, as the catalog shows it ("128K"). */
  context_window_label: string
  max_output_tokens: number
  region: string
  weights: string
  /** Publication date as "12 Mar 2025". */
  published: string
  /** EGP per 1,000,000 input tokens, as a decimal string. */
  input_price_egp_per_1m: string
  /** EGP per 1,000,000 output tokens, as a decimal string. */
  output_price_egp_per_1m: string
  /** Estimated EGP for 50M input plus 15M output tokens a month at these prices. */
  monthly_cost_example_egp: string
  /** True when the prices are illustrative samples rather than a price list. */
  prices_are_samples: boolean
  embedding_dimensions?: number
  shutdown_date: string | null
  replacement?: string | null
}

/** The answer of GET /v1/models. */
export interface ModelList {
  object: 'list'
  data: ModelObject[]
}
