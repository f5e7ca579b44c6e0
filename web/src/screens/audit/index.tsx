import { PageHeader } from '../../ui'

export function AuditPage() {
  return <PageHeader title="Audit log" />
}
