import type { ComponentChildren } from 'preact'

export type BadgeTone = 'neutral' | 'success' | 'warning' | 'danger' | 'info'

/** A short status word: "active", "revoked", "owner". */
export function Badge({ tone = 'neutral', children }: { tone?: BadgeTone; children: ComponentChildren }) {
  return <span class={`badge badge-${tone}`}>{children}</span>
}

/** The tone of a status the API gives. */
export function statusTone(status: string): BadgeTone {
  switch (status) {
    case 'active':
    case 'accepted':
    case 'Live':
    case 'closed':
      return 'success'
    case 'pending':
    case 'scheduled':
    case 'half_open':
      return 'warning'
    case 'revoked':
    case 'expired':
    case 'suspended':
    case 'disabled':
    case 'deleted':
    case 'Retired':
    case 'retired':
    case 'open':
      return 'danger'
    default:
      return 'neutral'
  }
}
