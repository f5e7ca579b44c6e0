import { PageHeader } from '../../ui'

export function ForgotPasswordPage() {
  return <PageHeader title="Forgot your password?" />
}
