import { PageHeader } from '../../ui'

export function SignupPage() {
  return <PageHeader title="Sign up" />
}
