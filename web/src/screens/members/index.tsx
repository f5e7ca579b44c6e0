import { PageHeader } from '../../ui'

export function MembersPage() {
  return <PageHeader title="Members" />
}
