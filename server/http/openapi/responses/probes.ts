import { t } from 'elysia'

const checkState = t.Union([t.Literal('ok'), t.Literal('failing'), t.Literal('not_configured')], {
  description: '`ok`, `failing`, or `not_configured` (Redis without `REDIS_URL`).',
})

/** The answer of GET /healthz. */
export const HealthStatus = t.Object({ status: t.Literal('ok') })

/** The answer of a ready GET /readyz; a 503 carries the same `checks` beside its error. */
export const ReadinessStatus = t.Object({
  status: t.Literal('ok'),
  checks: t.Object({ database: checkState, redis: checkState, deployments: checkState }, { description: 'Each part the gateway needs, and how it answers.' }),
})

/** The answer of GET /metrics. */
export const MetricsText = t.String({ description: 'Every metric in the Prometheus text format (version 0.0.4).' })
