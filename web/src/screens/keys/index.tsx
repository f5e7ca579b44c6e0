import { PageHeader } from '../../ui'

export function KeysPage() {
  return <PageHeader title="API keys" />
}
