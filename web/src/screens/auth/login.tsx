import { PageHeader } from '../../ui'

export function LoginPage() {
  return <PageHeader title="Log in" />
}
