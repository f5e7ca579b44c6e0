import { PageHeader } from '../../ui'

export function NewOrganizationPage() {
  return <PageHeader title="New organization" />
}
