import { demoCatalogPath, embeddingsModel } from '../support/test-app'

export { chatModel, embeddingsModel } from '../support/test-app'

const catalog = (await Bun.file(demoCatalogPath).json()) as { models: Array<{ id: string; embedding_dimensions?: number }> }

/** The vector size of the embeddings model, as the demo catalog that the test gateways run on gives it. */
export const embeddingDimensions = catalog.models.find((model) => model.id === embeddingsModel)!.embedding_dimensions!
