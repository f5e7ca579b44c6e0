import type { ComponentChildren } from 'preact'
import type { ApiProblem } from '../lib/api'
import { Button } from './button'

/**
 * An error as the person reads it: the gateway's message, what to do, and the request id to quote.
 * (An unverified address also raises the shell's notice, which mails a new link.)
 */
export function ErrorAlert({ problem, onRetry, children }: { problem: ApiProblem | null | undefined; onRetry?: () => void; children?: ComponentChildren }) {
  if (!problem) return null
  return (
    <div class="alert alert-error" role="alert">
      <p class="alert-title">{problem.message}</p>
      {problem.hint && <p>{problem.hint}</p>}
      {children}
      {problem.requestId && (
        <p class="muted small">
          Request id: <code>{problem.requestId}</code>
        </p>
      )}
      {onRetry && (
        <Button small onClick={onRetry}>
          Try again
        </Button>
      )}
    </div>
  )
}

/** A notice that something worked, read out by screen readers. */
export function SuccessAlert({ children }: { children: ComponentChildren }) {
  return (
    <div class="alert alert-success" role="status">
      {children}
    </div>
  )
}
