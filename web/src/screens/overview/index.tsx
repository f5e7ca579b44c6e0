import { PageHeader } from '../../ui'

export function OverviewPage() {
  return <PageHeader title="Overview" />
}
