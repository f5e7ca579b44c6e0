import { describe, expect, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import { firstUnstorable, isStorable, refuseUnstorableText } from '../../../server/http/plugins/storable-text'

describe('text Postgres can hold', () => {
  test('refuses U+0000 and unpaired surrogates, keeps every other character, pairs included', () => {
    expect(['', 'plain', 'مرحبا', 'emoji \ud83d\ude00', '\u0001\u007f\ufffd', 'tab\tnewline\n'].every(isStorable)).toBe(true)
    expect(['\u0000', 'a\u0000b', 'high \ud83d alone', 'low \ude00 alone', 'reversed \ude00\ud83d', 'at the end \ud83d'].some(isStorable)).toBe(false)
  })

  test('names the first field that holds such text, in body order, keys included', () => {
    const body = { name: 'ok', members: [{ email: 'a@example.test' }, { email: 'b\u0000@example.test' }], later: '\u0000' }

    expect(firstUnstorable(body, '')).toBe('members[1].email')
    expect(firstUnstorable({ metadata: { 'bad\ud800key': 1 } }, '')).toBe('metadata.bad\ud800key')
    expect(firstUnstorable([['x', '\u0000']], 'stops')).toBe('stops[0][1]')
    expect(firstUnstorable({ n: 1, ok: true, none: null, list: ['a', { b: 'c' }] }, '')).toBeNull()
  })

  test('looks at path parameters, then the query, then the body, and throws 400 invalid_request naming the field', () => {
    const refused = (request: Parameters<typeof refuseUnstorableText>[0]) => {
      try {
        refuseUnstorableText(request)
      } catch (error) {
        return error instanceof GatewayError ? [error.status, error.code, error.param] : error
      }
      return null
    }

    expect(refused({ params: { id: 'org_\u0000' }, query: { after: '\u0000' }, body: { name: '\u0000' } })).toEqual([400, 'invalid_request', 'id'])
    expect(refused({ params: { id: 'org_1' }, query: { after: '\u0000' }, body: { name: '\u0000' } })).toEqual([400, 'invalid_request', 'after'])
    expect(refused({ params: {}, query: {}, body: { name: 'x\ud800' } })).toEqual([400, 'invalid_request', 'name'])
    expect(refused({ params: { id: 'org_1' }, query: {}, body: undefined })).toBeNull()
  })
})
