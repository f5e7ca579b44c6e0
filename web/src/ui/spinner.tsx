import { classNames } from './class-names'

/** A spinner announced to screen readers as `label`. */
export function Spinner({ label = 'Loading…' }: { label?: string }) {
  return (
    <div class="loading" role="status">
      <span class="spinner" aria-hidden="true" />
      <span>{label}</span>
    </div>
  )
}

/** Grey bars standing in for content that is loading. */
export function Skeleton({ lines = 3, label = 'Loading…' }: { lines?: number; label?: string }) {
  return (
    <div class="skeleton" role="status" aria-label={label}>
      {Array.from({ length: lines }, (_, index) => (
        <span key={index} class={classNames('skeleton-line', index === lines - 1 && 'skeleton-line-short')} />
      ))}
    </div>
  )
}
