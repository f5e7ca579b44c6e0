import type { ComponentChildren } from 'preact'
import { isOperator } from '../../lib/session'
import { EmptyState, PageHeader } from '../../ui'

/** The operators' pages for operators only: anyone else sees why, not screens whose every call would be refused. */
export function OperatorGate({ title, children }: { title: string; children: ComponentChildren }) {
  if (!isOperator.value) {
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
