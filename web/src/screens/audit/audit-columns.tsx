import type { ComponentChildren } from 'preact'
import { formatDateTime } from '../../lib/format'
import type { AuditLog } from '../../lib/sdk'
import { Badge, type Column } from '../../ui'
import { AuditDiff } from './audit-diff'

/** Who did something, as an audit record or a credit names them: `name`, else their e-mail or id, and what they are when not a user. */
export function ActorName({ actor, name }: { actor: { type: string; id: string; email: string | null } | null; name?: string }) {
  if (actor === null) return <span class="muted">—</span>
  return (
    <>
      <bdi>{name ?? actor.email ?? actor.id}</bdi> {actor.type !== 'user' && <Badge tone="info">{actor.type.replace('_', ' ')}</Badge>}
    </>
  )
}

/**
 * The columns of an audit trail: when (in `zone`), who, what, from where and what changed.
 * `actorName` names the actor better than the record can; `project` adds a Project column after What.
 */
export function auditColumns(zone: string, { actorName, project }: { actorName?: (record: AuditLog) => string; project?: (record: AuditLog) => ComponentChildren } = {}): Column<AuditLog>[] {
  return [
    { header: 'When', cell: (record) => formatDateTime(record.effective_at, zone) },
    { header: 'Who', cell: (record) => <ActorName actor={record.actor} name={actorName?.(record)} /> },
    {
      header: 'What',
      cell: (record) => (
        <>
          <code>{record.type}</code>
          <br />
          <span class="muted small">
            {record.target.type} <span class="mono">{record.target.id}</span>
          </span>
        </>
      ),
    },
    ...(project ? [{ header: 'Project', cell: project }] : []),
    { header: 'From', cell: (record) => <span class="mono">{record.ip_address ?? '—'}</span> },
    { header: 'Changes', cell: (record) => <AuditDiff changes={record.changes} /> },
  ]
}
