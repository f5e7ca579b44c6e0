import { PageHeader } from '../../ui'

/** The playground: try a model with the signed-in session. */
export function PlaygroundPage() {
  return <PageHeader title="Playground" />
}
