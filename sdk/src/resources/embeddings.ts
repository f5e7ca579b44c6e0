import type { EmbeddingsRequest, EmbeddingsResponse } from '@nilegate/shared/schemas/embeddings'
import { callOptions, unwrap, type GatewayApi, type RequestOptions } from '../api'

/** The body of an embeddings request; `encoding_format` only chooses what travels (base64 by default, being smaller). */
export type EmbeddingCreateParams = EmbeddingsRequest

/** One input's vector. */
export interface Embedding {
  object: 'embedding'
  index: number
  embedding: number[]
}

/** The embeddings of every input, as numbers whatever the wire encoding was. */
export interface CreateEmbeddingResponse extends Omit<EmbeddingsResponse, 'data'> {
  data: Embedding[]
}

/** A base64 string of little-endian float32 values as numbers, on any platform's byte order. */
export function decodeFloat32Base64(base64: string): number[] {
  const bytes = Uint8Array.from(atob(base64), (char) => char.charCodeAt(0))
  const view = new DataView(bytes.buffer)
  return Array.from({ length: bytes.byteLength / 4 }, (_, index) => view.getFloat32(index * 4, true))
}

/** POST /v1/embeddings. */
export class Embeddings {
  constructor(private readonly api: GatewayApi) {}

  /** The embeddings of `input` (a string, strings, token ids of cl100k_base or arrays of them). */
  async create(params: EmbeddingCreateParams, options?: RequestOptions): Promise<CreateEmbeddingResponse> {
    const answer = await unwrap(this.api.v1.embeddings.post({ ...params, encoding_format: params.encoding_format ?? 'base64' }, callOptions(options)))
    return {
      ...answer,
      data: answer.data.map((item) => ({ ...item, embedding: typeof item.embedding === 'string' ? decodeFloat32Base64(item.embedding) : item.embedding })),
    }
  }
}
