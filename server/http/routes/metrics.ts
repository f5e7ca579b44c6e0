import { timingSafeEqual } from 'node:crypto'
import { Elysia } from 'elysia'
import { GatewayError } from '@nilegate/shared/errors'
import type { GatewayMetrics } from '../../observability/gateway-metrics'
import type { RouteTable } from '../plugins/error-handler'

export const metricsRouteTable: RouteTable = [{ pattern: /^\/metrics\/?$/, methods: ['GET', 'HEAD'] }]

function sameToken(sent: string, expected: Buffer): boolean {
  const given = Buffer.from(sent)
  return given.length === expected.length && timingSafeEqual(given, expected)
}

/**
 * `GET /metrics`: every metric in Prometheus text format. With a token (METRICS_TOKEN) only a
 * request that sends it as `Authorization: Bearer <token>` is answered (401 otherwise); without one,
 * anyone who reaches the port may scrape, so keep it behind the network's edge or set a token.
 * With metrics off (METRICS=off, `metrics` null) it answers 404.
 */
export function metricsRoutes(metrics: GatewayMetrics | null, token: string | null) {
  const expected = token === null ? null : Buffer.from(token)
  return new Elysia({ name: 'metrics' }).get('/metrics', async ({ request, set }): Promise<string> => {
    if (expected !== null) {
      const authorization = request.headers.get('authorization')
      if (!authorization) throw new GatewayError('missing_auth_header', 'Missing Authorization header. Send "Authorization: Bearer <METRICS_TOKEN>".')
      const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization)
      if (!match || !sameToken(match[1]!, expected)) throw new GatewayError('invalid_api_key', 'The metrics token is not correct.')
    }
    if (metrics === null) throw new GatewayError('not_found', 'Metrics are turned off on this gateway (METRICS=off).')
    set.headers['content-type'] = metrics.contentType
    set.headers['cache-control'] = 'no-store'
    return metrics.text()
  })
}
