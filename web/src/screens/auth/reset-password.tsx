import { PageHeader } from '../../ui'

export function ResetPasswordPage() {
  return <PageHeader title="Choose a new password" />
}
