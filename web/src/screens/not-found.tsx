import { PageHeader } from '../ui'

/** A dashboard path with no page. */
export function NotFoundPage() {
  return (
    <div>
      <PageHeader title="Page not found" />
      <p>
        There is no page at this address. <a href="/">Go to the overview</a>.
      </p>
    </div>
  )
}
