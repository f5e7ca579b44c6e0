import { PageHeader } from '../../ui'

export function ProjectPage({ id }: { id: string }) {
  return <PageHeader title={id} />
}
