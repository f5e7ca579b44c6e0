import { GatewayError } from '@nilegate/shared/errors'
import type { Tiktoken } from 'js-tiktoken/lite'

/**
 * Token ids sent to the embeddings endpoint, as the text they stand for. Clients send ids of
 * OpenAI's cl100k_base encoding: LangChain's OpenAIEmbeddings for Python does so by default,
 * whatever the model is called. A model with a vocabulary of its own would read those ids as other tokens and
 * embed something else without a word, so they are decoded here and every provider embeds text.
 */
const tokenIdEncoding = 'cl100k_base'

// cl100k_base has 100,256 byte-pair tokens, ids 0 to 100,255, and special tokens above them
// (<|endoftext|> is 100,257) with gaps between.
const byteTokens = 100_256

interface Encoding {
  tiktoken: Tiktoken
  specialIds: Set<number>
}

// Loaded on the first request that sends token ids: the encoding takes about a fifth of a second
// and 85 MB to load, which a gateway that is never sent ids does not need to pay.
let loading: Promise<Encoding> | null = null

function encoding(): Promise<Encoding> {
  if (loading) return loading
  loading = Promise.all([import('js-tiktoken/lite'), import('js-tiktoken/ranks/cl100k_base')]).then(([{ Tiktoken }, { default: ranks }]) => ({
    tiktoken: new Tiktoken(ranks),
    specialIds: new Set(Object.values(ranks.special_tokens)),
  }))
  // A load that failed is tried again by the next request rather than failing every one after it.
  loading.catch(() => (loading = null))
  return loading
}

// 1 to 2 ms of decoding here: the event loop is let in between, so that a call of 300,000 ids (40
// to 90 ms) does not hold every other response all that time.
const idsPerSlice = 8_192

/**
 * The text of each item of ids. An id that is not a token of cl100k_base is an invalid_request
 * naming it: `input[3]` for a single array of ids, `input[1][3]` for arrays of them. Each item is
 * decoded on its own: a character whose bytes two items split becomes replacement characters.
 */
export async function decodeTokenIds(items: readonly number[][], nested: boolean): Promise<string[]> {
  const { tiktoken, specialIds } = await encoding()
  const texts: string[] = []
  let sinceYield = 0
  for (let i = 0; i < items.length; i++) {
    const ids = items[i]!
    if (sinceYield >= idsPerSlice) {
      sinceYield = 0
      await new Promise((resolve) => setImmediate(resolve))
    }
    sinceYield += ids.length
    for (let j = 0; j < ids.length; j++) {
      const id = ids[j]!
      if (id < byteTokens || specialIds.has(id)) continue
      const param = nested ? `input[${i}][${j}]` : `input[${j}]`
      throw new GatewayError('invalid_request', `${param} is ${id}, which is not a token id of ${tokenIdEncoding} (the encoding of OpenAI's embedding models). Send text, or ids of ${tokenIdEncoding}.`, param)
    }
    texts.push(tiktoken.decode(ids))
  }
  return texts
}
