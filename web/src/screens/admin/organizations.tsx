import { useState } from 'preact/hooks'
import { accountApi } from '../../lib/api'
import { formatDateTime, formatEgp } from '../../lib/format'
import type { AdminOrganization, AdminOrganizationListParams } from '../../lib/sdk'
import { cursorPage, usePagedList } from '../../lib/use-resource'
import { Badge, EmptyState, PageHeader, PagedTable, SearchForm, SelectField, TextField, statusTone, type Column } from '../../ui'
import { localTimeZone, OperatorGate } from './operator-gate'

type StatusFilter = '' | 'active' | 'suspended'

const columns: Column<AdminOrganization>[] = [
  {
    header: 'Organization',
    cell: (organization) => (
      <a href={`/admin/organizations/${encodeURIComponent(organization.id)}`} dir="auto">
        {organization.name}
      </a>
    ),
  },
  { header: 'ID', cell: (organization) => <code>{organization.id}</code> },
  { header: 'Status', cell: (organization) => <Badge tone={statusTone(organization.status)}>{organization.status}</Badge> },
  { header: 'Plan', cell: (organization) => organization.plan_tier },
  { header: 'Balance', numeric: true, cell: (organization) => formatEgp(organization.balance_egp) },
  { header: 'Created', cell: (organization) => formatDateTime(organization.created_at, localTimeZone) },
]

/** Operators: every organization of the platform, searched by name or id, filtered by status. */
export function AdminOrganizationsPage() {
  const [query, setQuery] = useState('')
  const [status, setStatus] = useState<StatusFilter>('')
  const [applied, setApplied] = useState<{ q: string; status: StatusFilter }>({ q: '', status: '' })

  const list = usePagedList((cursor, signal) => {
    const params: AdminOrganizationListParams = { after: cursor, limit: 25 }
    if (applied.q !== '') params.q = applied.q
    if (applied.status !== '') params.status = applied.status
    return accountApi().admin.organizations.page(params, { signal }).then(cursorPage)
  }, [applied.q, applied.status])

  return (
    <OperatorGate title="Organizations">
      <PageHeader title="Organizations" description="Every organization on the platform: suspend or reactivate one, change its plan and limits, add credit." />
      <SearchForm label="Search organizations" onSearch={() => setApplied({ q: query.trim(), status })}>
        <TextField label="Search" type="search" hint="Part of a name, or an organization's exact id." value={query} onInput={(event) => setQuery(event.currentTarget.value)} />
        <SelectField label="Status" value={status} onChange={(event) => setStatus(event.currentTarget.value as StatusFilter)}>
          <option value="">Any status</option>
          <option value="active">Active</option>
          <option value="suspended">Suspended</option>
        </SelectField>
      </SearchForm>
      <PagedTable
        list={list}
        caption="Organizations"
        hideCaption
        columns={columns}
        rowKey={(organization) => organization.id}
        empty={<EmptyState title={applied.q || applied.status ? 'No organization matches.' : 'No organizations yet.'} />}
      />
    </OperatorGate>
  )
}
