import { PageHeader } from '../../ui'

export function VerifyEmailPage() {
  return <PageHeader title="Verify your e-mail address" />
}
