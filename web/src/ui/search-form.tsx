import type { ComponentChildren } from 'preact'
import { Button } from './button'

/** A search landmark named `label`: its filters, and a button (`submitLabel`) that applies them with `onSearch`. */
export function SearchForm({ label, submitLabel = 'Search', onSearch, children }: { label: string; submitLabel?: string; onSearch: () => void; children: ComponentChildren }) {
  return (
    <form
      role="search"
      class="filters"
      aria-label={label}
      onSubmit={(event) => {
        event.preventDefault()
        onSearch()
      }}
    >
      {children}
      <div class="form-actions">
        <Button type="submit" variant="primary">
          {submitLabel}
        </Button>
      </div>
    </form>
  )
}
