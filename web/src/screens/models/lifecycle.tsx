import type { ModelObject } from '../../lib/sdk'
import { Badge } from '../../ui'

const dayFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeZone: 'UTC' })

/** A catalog date (YYYY-MM-DD, a UTC day) as the browser's locale writes it. */
export function formatCatalogDate(day: string | null | undefined): string {
  if (!day) return '—'
  const moment = Date.parse(`${day}T00:00:00Z`)
  return Number.isNaN(moment) ? day : dayFormat.format(moment)
}

/** The path of a model's page; ids contain '/', kept as segments. */
export function modelPath(id: string): string {
  return `/models/${id.split('/').map(encodeURIComponent).join('/')}`
}

/** Where a model stands: live, live until a date (with its replacement), or retired. */
export function LifecycleBadge({ model }: { model: Pick<ModelObject, 'status' | 'shutdown_date'> }) {
  if (model.status === 'Retired') return <Badge tone="danger">Retired</Badge>
  if (model.shutdown_date) return <Badge tone="warning">Retires {formatCatalogDate(model.shutdown_date)}</Badge>
  return <Badge tone="success">Live</Badge>
}
