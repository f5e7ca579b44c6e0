import { PageHeader } from '../../ui'

export function ProjectsPage() {
  return <PageHeader title="Projects" />
}
