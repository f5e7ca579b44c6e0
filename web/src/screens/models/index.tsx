import { PageHeader } from '../../ui'

/** The model catalog. */
export function ModelsPage() {
  return <PageHeader title="Models" />
}

/** One model of the catalog. */
export function ModelPage({ id }: { id: string }) {
  return <PageHeader title={id} />
}
