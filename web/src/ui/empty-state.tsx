import type { ComponentChildren } from 'preact'

/** What a list shows when it has nothing yet, and what to do about it. */
export function EmptyState({ title, children, action }: { title: string; children?: ComponentChildren; action?: ComponentChildren }) {
  return (
    <div class="empty-state">
      <p class="empty-state-title">{title}</p>
      {children && <p class="muted">{children}</p>}
      {action && <div class="empty-state-action">{action}</div>}
    </div>
  )
}
