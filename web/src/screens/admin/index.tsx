import { PageHeader } from '../../ui'

/** Operators: every organization of the platform. */
export function AdminOrganizationsPage() {
  return <PageHeader title="Organizations" />
}

/** Operators: one organization, its settings and credit. */
export function AdminOrganizationPage({ id }: { id: string }) {
  return <PageHeader title={`Organization ${id}`} />
}

/** Operators: every user of the platform. */
export function AdminUsersPage() {
  return <PageHeader title="Users" />
}

/** Operators: model retirements. */
export function AdminModelsPage() {
  return <PageHeader title="Model retirements" />
}

/** Operators: deployments with their circuits and requests in flight. */
export function AdminDeploymentsPage() {
  return <PageHeader title="Deployments" />
}
