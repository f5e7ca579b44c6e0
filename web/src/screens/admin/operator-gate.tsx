import type { ComponentChildren } from 'preact'
import { me } from '../../lib/session'
import { EmptyState, PageHeader } from '../../ui'

/**
 * The operators' pages for operators only: anyone else sees why instead of screens whose every
 * call would be refused. While the signed-in user's record says nothing either way, the page shows
 * and the API's answer decides.
 */
export function OperatorGate({ title, children }: { title: string; children: ComponentChildren }) {
  const user = me.value as { is_operator?: unknown } | null
  if (user !== null && user.is_operator === false) {
    return (
      <>
        <PageHeader title={title} />
        <EmptyState title="For platform operators only">This page runs the whole platform; your account is not an operator's.</EmptyState>
      </>
    )
  }
  return <>{children}</>
}

/** The browser's own time zone: operators' lists span organizations with different billing zones. */
export const localTimeZone = Intl.DateTimeFormat().resolvedOptions().timeZone
