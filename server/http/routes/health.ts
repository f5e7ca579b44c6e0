import { Elysia, status } from 'elysia'
import { GatewayError, type ErrorBody } from '@nilegate/shared/errors'
import type { ReadinessChecks, Readiness } from '../../observability/readiness'
import type { RouteTable } from '../plugins/error-handler'

export const healthRouteTable: RouteTable = [
  { pattern: /^\/healthz\/?$/, methods: ['GET', 'HEAD'] },
  { pattern: /^\/readyz\/?$/, methods: ['GET', 'HEAD'] },
]

/** What /readyz reports of an app built without readiness checks (in tests). */
const unchecked: ReadinessChecks = { database: 'ok', redis: 'not_configured', deployments: 'ok' }

/** A 503 of /readyz: the envelope, and the checks beside it. */
export type NotReadyBody = ErrorBody & { checks: ReadinessChecks }

/**
 * `GET /healthz`: the process serves (200 `{"status":"ok"}`; nothing else is checked). `GET /readyz`:
 * the database answers, Redis answers when there is one, a live deployment may be sent traffic, and
 * the gateway is not shutting down; otherwise 503 `service_unavailable` naming the failing parts,
 * with the same `checks`. Both are public and cheap (readiness is checked at most once a second,
 * whoever asks), HEAD answers without the body, and neither is rate limited nor leaves a usage row.
 * Without `readiness` (an app built for tests), /readyz reports ready.
 */
export function healthRoutes(readiness: Readiness | null) {
  return new Elysia({ name: 'health' })
    .get('/healthz', () => ({ status: 'ok' as const }))
    .get('/readyz', async ({ set }) => {
      if (readiness === null) return { status: 'ok' as const, checks: unchecked }
      const report = await readiness.check()
      if (report.ready) return { status: 'ok' as const, checks: report.checks }
      const error = new GatewayError('service_unavailable', `Not ready: ${report.reasons.join('; ')}.`)
      set.headers['retry-after'] = String(error.retryAfterS)
      return status(503, { ...error.toBody(), checks: report.checks } satisfies NotReadyBody)
    })
}
