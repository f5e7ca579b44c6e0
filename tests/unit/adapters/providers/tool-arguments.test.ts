import { describe, expect, test } from 'bun:test'
import { seededRandom } from '../../../../server/adapters/providers/stable-hash'
import { toolArguments } from '../../../../server/adapters/providers/tool-arguments'

const random = () => seededRandom(7)

describe('toolArguments', () => {
  test('fills every property with a value of its type, within its bounds', () => {
    const args = JSON.parse(
      toolArguments(
        {
          type: 'object',
          properties: {
            city: { type: 'string' },
            when: { type: 'string', format: 'date' },
            unit: { type: 'string', enum: ['c', 'f'] },
            days: { type: 'integer', minimum: 2, maximum: 4 },
            ratio: { type: 'number', minimum: 0, maximum: 1 },
            verbose: { type: 'boolean' },
            tags: { type: 'array', items: { type: 'string' }, minItems: 2 },
            note: { type: ['string', 'null'] },
            fixed: { const: 'always' },
          },
        },
        random(),
      ),
    )

    expect(args).toEqual({
      city: expect.any(String),
      when: '2025-01-15',
      unit: expect.stringMatching(/^[cf]$/),
      days: expect.any(Number),
      ratio: expect.any(Number),
      verbose: expect.any(Boolean),
      tags: [expect.any(String), expect.any(String)],
      note: expect.any(String),
      fixed: 'always',
    })
    expect(Number.isInteger(args.days) && args.days >= 2 && args.days <= 4).toBe(true)
    expect(args.ratio >= 0 && args.ratio <= 1).toBe(true)
  })

  test('resolves local $refs and picks the non-null branch of anyOf', () => {
    const args = JSON.parse(
      toolArguments(
        {
          type: 'object',
          $defs: { Point: { type: 'object', properties: { x: { type: 'integer' }, y: { type: 'integer' } } } },
          properties: { origin: { $ref: '#/$defs/Point' }, label: { anyOf: [{ type: 'null' }, { type: 'string' }] } },
        },
        random(),
      ),
    )

    expect(args).toEqual({ origin: { x: expect.any(Number), y: expect.any(Number) }, label: expect.any(String) })
  })

  test('gives an empty object for a function without parameters, and the same arguments for the same seed', () => {
    expect(toolArguments(undefined, random())).toBe('{}')
    const schema = { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } }
    expect(toolArguments(schema, random())).toBe(toolArguments(schema, random()))
  })

  test('stops at a bounded depth on recursive schemas', () => {
    const schema = { type: 'object', properties: { child: { $ref: '#' } } }

    const args = JSON.parse(toolArguments(schema, random()))

    expect(JSON.stringify(args)).toBe('{"child":{"child":{"child":{"child":{"child":{}}}}}}')
  })
})
