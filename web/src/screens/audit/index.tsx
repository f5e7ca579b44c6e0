import { useState } from 'preact/hooks'
import { api } from '../../lib/api'
import { describeTimeZone, nextDate, startOfDayIn } from '../../lib/format'
import type { AuditLog, AuditLogListParams, OrganizationUser } from '../../lib/sdk'
import { billingTimeZone, can } from '../../lib/session'
import { cursorPage, usePagedList, useResource } from '../../lib/use-resource'
import { Button, Form, PageHeader, PagedTable, SelectField, TextField, useForm } from '../../ui'
import { auditColumns } from './audit-columns'

/** Actions the trail records, offered as suggestions for the event type filter. */
const knownActions = [
  'api_key.created',
  'api_key.updated',
  'api_key.revoked',
  'api_key.use_denied',
  'credit.added',
  'invite.created',
  'invite.accepted',
  'invite.revoked',
  'login.succeeded',
  'login.failed',
  'member.added',
  'member.removed',
  'member.role_changed',
  'organization.created',
  'organization.updated',
  'organization.suspended',
  'organization.reactivated',
  'password.changed',
  'password_reset.requested',
  'password_reset.completed',
  'project.created',
  'project.updated',
  'project.archived',
  'session.revoked',
]

interface Filters {
  action: string
  actorId: string
  projectId: string
  from: string
  to: string
}

const noFilters: Filters = { action: '', actorId: '', projectId: '', from: '', to: '' }

/** /audit: who did what, when and from where, with the fields they changed (owners and admins). */
export function AuditPage() {
  if (!can('audit_logs.read')) {
    return (
      <div>
        <PageHeader title="Audit log" />
        <p>Only owners and admins of the organization can read its audit log.</p>
      </div>
    )
  }
  return <AuditTrail />
}

function AuditTrail() {
  const zone = billingTimeZone.value
  const [filters, setFilters] = useState<Filters>(noFilters)
  const members = useResource((signal) => api().organization.users.page({ limit: 100 }, { signal }), [])
  const projects = useResource((signal) => api().organization.projects.page({ limit: 100, include_archived: true }, { signal }), [])

  const records = usePagedList((cursor, signal) => {
    const effective: AuditLogListParams['effective_at'] = {}
    if (filters.from) effective.gte = startOfDayIn(filters.from, zone)
    if (filters.to) effective.lt = startOfDayIn(nextDate(filters.to), zone)
    const params: AuditLogListParams = {
      after: cursor,
      limit: 25,
      effective_at: effective,
      ...(filters.action ? { actions: [filters.action] } : {}),
      ...(filters.actorId ? { actor_ids: [filters.actorId] } : {}),
      ...(filters.projectId ? { project_ids: [filters.projectId] } : {}),
    }
    return api().organization.auditLogs.page(params, { signal }).then(cursorPage)
  }, [filters, zone])

  const form = useForm({
    initial: noFilters as Filters & Record<string, string>,
    validate: (values) => ({ to: values.from && values.to && values.to < values.from ? 'The last day comes before the first.' : undefined }),
    fieldOf: (param) => (param === 'actions' || param === 'event_types' ? 'action' : param.startsWith('effective_at') ? 'from' : null),
    submit: async (values) => setFilters({ ...values }),
  })

  const projectName = (id: string | null) => (id === null ? '—' : (projects.data?.data.find((project) => project.id === id)?.name ?? id))
  const actorName = (record: AuditLog) => record.actor.email ?? members.data?.data.find((member: OrganizationUser) => member.id === record.actor.id)?.email ?? record.actor.id

  const columns = auditColumns(zone, { actorName, project: (record) => <bdi>{projectName(record.project_id)}</bdi> })

  return (
    <div>
      <PageHeader title="Audit log" description={`Newest first. Times in the billing time zone, ${describeTimeZone(zone)}.`} />
      <Form state={form} label="Audit log filters">
        <div class="filters">
          <TextField label="Event type" optional list="audit-actions" placeholder="api_key.created" {...form.text('action')} error={form.errors.action} />
          <datalist id="audit-actions">
            {knownActions.map((action) => (
              <option key={action} value={action} />
            ))}
          </datalist>
          <SelectField label="Actor" value={form.values.actorId} onChange={(event) => form.set('actorId', event.currentTarget.value)}>
            <option value="">Anyone</option>
            {(members.data?.data ?? []).map((member) => (
              <option key={member.id} value={member.id}>
                {member.email}
              </option>
            ))}
          </SelectField>
          <SelectField label="Project" value={form.values.projectId} onChange={(event) => form.set('projectId', event.currentTarget.value)}>
            <option value="">Any project</option>
            {(projects.data?.data ?? []).map((project) => (
              <option key={project.id} value={project.id}>
                {project.name}
              </option>
            ))}
          </SelectField>
          <TextField label="From" type="date" optional {...form.text('from')} error={form.errors.from} />
          <TextField label="To" type="date" optional {...form.text('to')} error={form.errors.to} />
        </div>
        <div class="form-actions">
          <Button type="submit" variant="primary">
            Filter
          </Button>
          <Button
            onClick={() => {
              form.reset(noFilters as Filters & Record<string, string>)
              setFilters(noFilters)
            }}
          >
            Clear filters
          </Button>
        </div>
      </Form>
      <PagedTable caption="Audit records" hideCaption list={records} columns={columns} rowKey={(record) => record.id} empty={<p class="muted">No records match these filters.</p>} />
    </div>
  )
}
