import { estimateTextTokens } from '../../server/core/estimate-tokens'
import type { EmbeddingInput } from '../../server/core/ports'

/** Text input as core/embeddings.ts hands it to a provider: with the estimate admission held. */
export function textInput(items: string[]): EmbeddingInput {
  return { items, tokens: items.reduce((sum, text) => sum + estimateTextTokens(text), 0) }
}
