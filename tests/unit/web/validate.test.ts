import { describe, expect, test } from 'bun:test'
import { allowListProblem, egpAmountProblem, isAddressOrCidr, listEntries, rpmProblem } from '../../../web/src/lib/validate'

describe("the dashboard's checks before sending", () => {
  test('knows IPv4 and IPv6 addresses and CIDRs', () => {
    const good = ['203.0.113.7', '10.0.0.0/8', '0.0.0.0/0', '2001:db8::/32', '::1', '::ffff:192.0.2.1', 'fe80::1/128']
    const bad = ['256.1.1.1', '10.0.0.0/33', '2001:db8::/129', '1.2.3', 'example.com', '10.0.0.0/8/1', '2001:db8:::1', '']

    expect([good.map(isAddressOrCidr), bad.map(isAddressOrCidr)]).toEqual([good.map(() => true), bad.map(() => false)])
  })

  test('names the first bad entry of an allow-list', () => {
    expect(allowListProblem('10.0.0.0/8\n2001:db8::/32, 192.0.2.1')).toBeUndefined()
    expect(allowListProblem('10.0.0.0/8\nnot-an-ip\n300.0.0.1')).toContain("'not-an-ip'")
    expect(listEntries(' a ,\n\nb\n')).toEqual(['a', 'b'])
  })

  test('takes EGP amounts the API takes: up to 6 decimals, no exponent or sign', () => {
    expect(['250', '99.5', '0.000001', ''].map((value) => egpAmountProblem(value))).toEqual([undefined, undefined, undefined, undefined])
    expect(['1e3', '-5', '1.2345678', '12,5', 'abc'].every((value) => egpAmountProblem(value) !== undefined)).toBe(true)
    expect(egpAmountProblem('', false)).toBeDefined()
  })

  test('takes whole positive requests per minute, or nothing', () => {
    expect([rpmProblem(''), rpmProblem('60')]).toEqual([undefined, undefined])
    expect(['0', '1.5', '-3', 'ten'].every((value) => rpmProblem(value) !== undefined)).toBe(true)
  })
})
