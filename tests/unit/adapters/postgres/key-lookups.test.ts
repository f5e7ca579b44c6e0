import { expect, test } from 'bun:test'
import { batchKeyLookups, maxKeysPerLookup } from '../../../../server/adapters/postgres/key-lookups'
import type { ApiKeyIdentity } from '../../../../server/core/ports'
import { keyIdentity } from '../../../support/test-app'

const hash = (n: number) => n.toString(16).padStart(64, '0')

/** A lookup of many that knows even hashes, and records each statement it was asked for. */
function database() {
  const statements: string[][] = []
  const findMany = async (hashes: string[]): Promise<(ApiKeyIdentity | null)[]> => {
    statements.push(hashes)
    return hashes.map((hashHex) => (Number.parseInt(hashHex, 16) % 2 === 0 ? keyIdentity({ keyId: `key_${Number.parseInt(hashHex, 16)}` }) : null))
  }
  return { statements, findMany }
}

test('the lookups of one turn go in one statement, each answered with its own key', async () => {
  const { statements, findMany } = database()
  const lookUp = batchKeyLookups(findMany)

  const answers = await Promise.all([2, 3, 4, 2].map((n) => lookUp(hash(n))))

  expect(statements).toEqual([[hash(2), hash(3), hash(4), hash(2)]])
  expect(answers.map((identity) => identity?.keyId ?? null)).toEqual(['key_2', null, 'key_4', 'key_2'])
})

test('lookups of later turns go in statements of their own', async () => {
  const { statements, findMany } = database()
  const lookUp = batchKeyLookups(findMany)

  expect((await lookUp(hash(2)))?.keyId).toBe('key_2')
  expect((await lookUp(hash(4)))?.keyId).toBe('key_4')

  expect(statements).toEqual([[hash(2)], [hash(4)]])
})

test(`more than ${maxKeysPerLookup} lookups in a turn are split`, async () => {
  const { statements, findMany } = database()
  const lookUp = batchKeyLookups(findMany)
  const count = maxKeysPerLookup * 2 + 1

  const answers = await Promise.all(Array.from({ length: count }, (_, n) => lookUp(hash(n))))

  expect(statements.map((hashes) => hashes.length)).toEqual([maxKeysPerLookup, maxKeysPerLookup, 1])
  expect(answers.map((identity) => identity?.keyId ?? null)).toEqual(Array.from({ length: count }, (_, n) => (n % 2 === 0 ? `key_${n}` : null)))
})

test('a failed statement fails the lookups it held, and only those', async () => {
  let calls = 0
  const lookUp = batchKeyLookups(async (hashes) => {
    if (++calls === 1) throw new Error('connection refused')
    return hashes.map(() => keyIdentity())
  })

  const failed = await Promise.allSettled([lookUp(hash(1)), lookUp(hash(2))])
  expect(failed.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected'])
  expect((failed[0] as PromiseRejectedResult).reason.message).toBe('connection refused')

  expect(await lookUp(hash(3))).toEqual(keyIdentity())
})

test('a lookup of many that throws at once fails its lookups rather than the process', async () => {
  const lookUp = batchKeyLookups(() => {
    throw new Error('not open')
  })

  await expect(lookUp(hash(1))).rejects.toThrow('not open')
})
