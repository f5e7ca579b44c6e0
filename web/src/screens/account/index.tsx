import { PageHeader } from '../../ui'

export function AccountPage() {
  return <PageHeader title="Account" />
}
