import { BlockList, isIP } from 'node:net'

/** An IPv4 address mapped into IPv6 (`::ffff:1.2.3.4`) written as plain IPv4. */
export function normalizeIp(ip: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip)
  return mapped ? mapped[1]! : ip
}

/** A CIDR (`10.0.0.0/8`, `2001:db8::/32`) or single address, checked and written canonically; null when invalid. */
export function parseCidr(text: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | null {
  const [rawAddress, rawPrefix, ...rest] = text.trim().split('/')
  if (rest.length > 0 || !rawAddress) return null
  const address = normalizeIp(rawAddress)
  const version = isIP(address)
  if (version === 0) return null
  const family = version === 4 ? 'ipv4' : 'ipv6'
  const max = version === 4 ? 32 : 128
  if (rawPrefix === undefined) return { address, prefix: max, family }
  if (!/^\d{1,3}$/.test(rawPrefix) || Number(rawPrefix) > max) return null
  return { address, prefix: Number(rawPrefix), family }
}

/** A set of CIDRs, v4 and v6, that addresses are checked against. */
export class AddressList {
  private readonly blocks = new BlockList()
  readonly size: number

  /** Throws a RangeError naming the first entry that is not an address or CIDR. */
  constructor(cidrs: readonly string[]) {
    for (const cidr of cidrs) {
      const parsed = parseCidr(cidr)
      if (!parsed) throw new RangeError(`not an IP address or CIDR: ${JSON.stringify(cidr)}`)
      this.blocks.addSubnet(parsed.address, parsed.prefix, parsed.family)
    }
    this.size = cidrs.length
  }

  contains(ip: string): boolean {
    const address = normalizeIp(ip)
    const version = isIP(address)
    if (version === 0) return false
    return this.blocks.check(address, version === 4 ? 'ipv4' : 'ipv6')
  }
}

/**
 * The client's address: the socket peer, unless the peer is a trusted proxy; then the nearest
 * address of X-Forwarded-For that is not itself a trusted proxy (read right to left, since only
 * the entries our proxies appended can be believed).
 */
export function clientIp(peer: string | null, forwardedFor: string | null, trustedProxies: AddressList): string | null {
  if (peer === null) return null
  const socketAddress = normalizeIp(peer)
  if (!forwardedFor || trustedProxies.size === 0 || !trustedProxies.contains(socketAddress)) return socketAddress
  const hops = forwardedFor.split(',').map((hop) => normalizeIp(hop.trim()))
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!
    if (isIP(hop) === 0) return socketAddress
    if (!trustedProxies.contains(hop)) return hop
  }
  return hops[0] ?? socketAddress
}
