import type { Operation } from '../operation'
import { HealthStatus, MetricsText, ReadinessStatus } from '../responses/probes'

/** The probes of load balancers and orchestrators, and the metrics of Prometheus. */
export const probeOperations = {
  'GET /healthz': {
    operationId: 'getHealth',
    summary: 'Whether the process serves',
    description: 'Always `{"status": "ok"}` from a gateway that answers at all; nothing else is checked. HEAD answers the same without the body. No key, no rate limit, no usage row.',
    tag: 'Operations',
    access: 'public',
    response: HealthStatus,
  },
  'GET /readyz': {
    operationId: 'getReadiness',
    summary: 'Whether the gateway can serve requests',
    description:
      'Ready when the database answers, Redis answers (when `REDIS_URL` is set), at least one live deployment may be sent traffic (its circuit is not open), and the gateway is not shutting down. ' +
      'Otherwise 503 `service_unavailable`, the message naming the failing parts and `checks` beside the error. Checked at most once a second, whoever asks. HEAD answers the same without the body. ' +
      'No key, no rate limit, no usage row.',
    tag: 'Operations',
    access: 'public',
    response: ReadinessStatus,
    errors: ['service_unavailable'],
  },
  'GET /metrics': {
    operationId: 'getMetrics',
    summary: 'Metrics in the Prometheus text format',
    description:
      'Requests by route, model, status and error code; latency and time-to-first-token histograms; tokens and micro-EGP billed; admissions by outcome; requests and streams in flight; ' +
      'upstream calls and circuit states by deployment; usage rows waiting for the ledger and their lag; Redis and database round trips; and the process (CPU, memory, event loop). ' +
      'Labels never name a key, organization, project or request. With `METRICS_TOKEN` set, only `Authorization: Bearer <METRICS_TOKEN>` is answered; with `METRICS=off`, 404.',
    tag: 'Operations',
    access: 'metrics',
    response: MetricsText,
    mediaType: 'text/plain',
    errors: ['not_found'],
  },
} as const satisfies Record<string, Operation>
