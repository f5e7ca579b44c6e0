import { accountApi } from '../../lib/api'
import { formatDateTime, formatEgp } from '../../lib/format'
import type { AdminCreditTransaction, AdminOrganization } from '../../lib/sdk'
import { cursorPage, usePagedList, type PagedList } from '../../lib/use-resource'
import { EmptyState, PagedTable, Section, type Column } from '../../ui'
import { ActorName, auditColumns } from '../audit/audit-columns'

const creditKinds: Record<AdminCreditTransaction['kind'], string> = { top_up: 'top-up', demo_credit: 'demo credit', adjustment: 'adjustment', refund: 'refund' }

/** The organization's credit ledger, newest first; `reload` after a top-up shows it. */
export function useCreditLedger(organizationId: string): PagedList<AdminCreditTransaction> {
  return usePagedList((cursor, signal) => accountApi().admin.organizations.credits(organizationId, { after: cursor, limit: 10 }, { signal }).then(cursorPage), [organizationId])
}

/** Credits added to the organization, top-ups first of all. */
export function CreditLedger({ organization, ledger }: { organization: AdminOrganization; ledger: PagedList<AdminCreditTransaction> }) {
  const zone = organization.billing_time_zone
  const columns: Column<AdminCreditTransaction>[] = [
    { header: 'When', cell: (credit) => formatDateTime(credit.created_at, zone) },
    { header: 'Kind', cell: (credit) => creditKinds[credit.kind] ?? credit.kind },
    { header: 'Amount', numeric: true, cell: (credit) => formatEgp(credit.amount_egp) },
    { header: 'Reason', cell: (credit) => (credit.note ? <span dir="auto">{credit.note}</span> : '—') },
    { header: 'By', cell: (credit) => <ActorName actor={credit.actor} /> },
  ]
  return (
    <Section title="Credit ledger">
      <PagedTable caption="Credits added" hideCaption list={ledger} columns={columns} rowKey={(credit) => credit.id} empty={<EmptyState title="No credit added yet." />} />
    </Section>
  )
}

/** The organization's audit trail, newest first, as its owners see it. */
export function OrganizationAuditTrail({ organization }: { organization: AdminOrganization }) {
  const records = usePagedList((cursor, signal) => accountApi().admin.organizations.auditLogs(organization.id, { after: cursor, limit: 10 }, { signal }).then(cursorPage), [organization.id])
  const columns = auditColumns(organization.billing_time_zone)
  return (
    <Section title="Audit trail">
      <PagedTable caption="Audit records" hideCaption list={records} columns={columns} rowKey={(record) => record.id} empty={<EmptyState title="No records yet." />} />
    </Section>
  )
}
