import { useState } from 'preact/hooks'
import { api } from '../../lib/api'
import { formatCount, formatDateTime, formatEgp } from '../../lib/format'
import type { ApiKey, ApiKeyWithSecret, Balance } from '../../lib/sdk'
import { billingTimeZone, can } from '../../lib/session'
import { cursorPage, usePagedList } from '../../lib/use-resource'
import { Badge, Button, ConfirmDialog, EmptyState, PagedTable, statusTone, type Column } from '../../ui'
import { KeyFormDialog, keyScopes } from './key-form'
import { SecretDialog } from './secret-dialog'

type SpendLines = Balance['api_keys']

/**
 * The API keys of one project: limits, month-to-date spend and last use; create (secret shown
 * once), edit and revoke for the roles that may.
 */
export function ProjectKeys({ projectId, projectName, archived, spend }: { projectId: string; projectName: string; archived: boolean; spend: SpendLines | undefined }) {
  const keys = usePagedList((cursor) => api().organization.projects.apiKeys(projectId).page({ after: cursor, limit: 50 }).then(cursorPage), [projectId])
  const [creating, setCreating] = useState(false)
  const [created, setCreated] = useState<ApiKeyWithSecret | null>(null)
  const [editing, setEditing] = useState<ApiKey | null>(null)
  const [revoking, setRevoking] = useState<ApiKey | null>(null)
  const manage = can('api_keys.manage') && !archived
  const zone = billingTimeZone.value
  const spendOf = (key: ApiKey) => spend?.find((line) => line.id === key.id)

  const columns: Column<ApiKey>[] = [
    {
      header: 'Name',
      cell: (key) => (
        <>
          <bdi>{key.name}</bdi>
          <br />
          <code class="small">{key.redacted_value}</code>
        </>
      ),
    },
    { header: 'Status', cell: (key) => <Badge tone={statusTone(key.status)}>{key.status}</Badge> },
    { header: 'Scopes', cell: (key) => key.scopes.map((scope) => keyScopes.find((each) => each.id === scope)?.label ?? scope).join(', ') },
    {
      header: 'Limits',
      cell: (key) => (
        <span class="small">
          {key.rpm_limit === null ? 'RPM: default' : `RPM: ${formatCount(key.rpm_limit)}`}
          <br />
          {key.ip_allow_list.length === 0 ? 'Any IP' : `IPs: ${key.ip_allow_list.join(', ')}`}
          <br />
          {key.expires_at === null ? 'No expiry' : `Expires ${formatDateTime(key.expires_at, zone)}`}
        </span>
      ),
    },
    {
      header: 'Spend this month',
      numeric: true,
      cell: (key) => {
        const line = spendOf(key)
        if (line === undefined) return spend === undefined ? '…' : formatEgp('0')
        return (
          <>
            {formatEgp(line.month_to_date_spend_egp)}
            {line.monthly_spend_cap_egp !== null && <span class="muted small"> of {formatEgp(line.monthly_spend_cap_egp)}</span>}
          </>
        )
      },
    },
    { header: 'Created', cell: (key) => formatDateTime(key.created_at, zone) },
    { header: 'Last used', cell: (key) => (key.last_used_at === null ? 'Never' : formatDateTime(key.last_used_at, zone)) },
    {
      header: 'Actions',
      hiddenHeader: true,
      cell: (key) =>
        manage && key.status === 'active' ? (
          <div class="actions">
            <Button small onClick={() => setEditing(key)} aria-label={`Edit ${key.name}`}>
              Edit
            </Button>
            <Button small variant="danger" onClick={() => setRevoking(key)} aria-label={`Revoke ${key.name}`}>
              Revoke
            </Button>
          </div>
        ) : null,
    },
  ]

  return (
    <div>
      {manage && (
        <p>
          <Button variant="primary" onClick={() => setCreating(true)}>
            Create API key
          </Button>
        </p>
      )}
      <PagedTable
        caption={`API keys of ${projectName}`}
        hideCaption
        list={keys}
        columns={columns}
        rowKey={(key) => key.id}
        empty={<EmptyState title="No API keys yet.">{manage ? 'Create one to call the API from your code.' : 'Members, admins and owners can create them.'}</EmptyState>}
      />
      <KeyFormDialog
        projectId={projectId}
        open={creating}
        onClose={() => setCreating(false)}
        onCreated={(key) => {
          setCreating(false)
          keys.update((items) => [key, ...items])
          setCreated(key)
        }}
      />
      {editing && (
        <KeyFormDialog
          key={editing.id}
          projectId={projectId}
          apiKey={editing}
          open
          onClose={() => setEditing(null)}
          onSaved={(saved) => {
            keys.update((items) => items.map((item) => (item.id === saved.id ? saved : item)))
            setEditing(null)
          }}
        />
      )}
      <SecretDialog apiKey={created} onClose={() => setCreated(null)} />
      <ConfirmDialog
        open={revoking !== null}
        title="Revoke this key?"
        confirmLabel="Revoke key"
        danger
        onClose={() => setRevoking(null)}
        onConfirm={async () => {
          const key = revoking!
          await api().organization.projects.apiKeys(projectId).revoke(key.id)
          keys.update((items) => items.map((item) => (item.id === key.id ? { ...item, status: 'revoked' as const, revoked_at: Math.floor(Date.now() / 1000) } : item)))
        }}
      >
        <p>
          Requests with <bdi>{revoking?.name}</bdi> (<code>{revoking?.redacted_value}</code>) fail from now on, on every gateway instance within a second. This cannot be undone.
        </p>
      </ConfirmDialog>
    </div>
  )
}
