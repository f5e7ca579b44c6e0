import { PageHeader } from '../../ui'

export function InvitePage() {
  return <PageHeader title="Join an organization" />
}
