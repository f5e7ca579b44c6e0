import { describe, expect, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import { decodeTokenIds } from '../../../server/core/token-ids'

// "hello world" and "The Nile is long." in cl100k_base.
const helloWorld = [15339, 1917]
const nile = [791, 77290, 374, 1317, 13]

describe('decodeTokenIds', () => {
  test('gives the text of each item, in order, across the slices it decodes in', async () => {
    const items = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? Array(500).fill(helloWorld).flat() : nile))

    const texts = await decodeTokenIds(items, true)

    expect(texts).toHaveLength(40)
    expect(texts[0]).toBe('hello world'.repeat(500))
    expect(texts[39]).toBe('The Nile is long.')
  })

  test('decodes each item on its own: a character split between items leaves replacement characters in both', async () => {
    // "🙂 x" is [9468, 19044, 865]: the emoji's bytes span the first two ids.
    const texts = await decodeTokenIds([[9468], [19044, 865], [865]], true)

    expect(texts).toEqual(['\ufffd', '\ufffd\ufffd x', ' x'])
  })

  test('takes the special tokens and the last byte-pair token', async () => {
    expect(await decodeTokenIds([[100_255], [100_257, 100_276]], true)).toEqual([expect.any(String), '<|endoftext|><|endofprompt|>'])
  })

  test.each([
    [[[...nile, 100256]], false, 'input[5]'],
    [[helloWorld, [1917, 100_300, 5]], true, 'input[1][1]'],
    [[[2 ** 40]], true, 'input[0][0]'],
    [[[100_261]], true, 'input[0][0]'],
    [[[100_277]], true, 'input[0][0]'],
  ])('case %# names the first id that is no token', async (items, nested, param) => {
    const error = await decodeTokenIds(items, nested).catch((thrown: unknown) => thrown)

    expect(error).toBeInstanceOf(GatewayError)
    expect(error).toMatchObject({ code: 'invalid_request', status: 400, param })
  })
})
