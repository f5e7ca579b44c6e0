import { PageHeader } from '../../ui'

export function UsagePage() {
  return <PageHeader title="Usage" />
}
