import type { ComponentChildren } from 'preact'
import { useState } from 'preact/hooks'
import { reportError, type ApiProblem } from '../lib/api'
import { Button } from './button'
import { Dialog } from './dialog'
import { ErrorAlert } from './error-alert'

export interface ConfirmDialogProps {
  open: boolean
  title: string
  children: ComponentChildren
  /** The confirming button's words: say the action, like "Revoke key". */
  confirmLabel: string
  danger?: boolean
  /** Runs the action; the dialog closes when it resolves and shows the error when it throws. */
  onConfirm: () => Promise<unknown>
  onClose: () => void
}

/** Asks before an action that cannot be undone, runs it, and shows its error in place. */
export function ConfirmDialog({ open, title, children, confirmLabel, danger = false, onConfirm, onClose }: ConfirmDialogProps) {
  const [busy, setBusy] = useState(false)
  const [problem, setProblem] = useState<ApiProblem | null>(null)

  const close = () => {
    setProblem(null)
    onClose()
  }

  const confirm = async () => {
    setBusy(true)
    setProblem(null)
    try {
      await onConfirm()
      close()
    } catch (error) {
      setProblem(reportError(error))
    } finally {
      setBusy(false)
    }
  }

  return (
    <Dialog
      open={open}
      title={title}
      onClose={close}
      actions={
        <>
          <Button onClick={close}>Cancel</Button>
          <Button variant={danger ? 'danger' : 'primary'} busy={busy} onClick={confirm}>
            {confirmLabel}
          </Button>
        </>
      }
    >
      {children}
      <ErrorAlert problem={problem} />
    </Dialog>
  )
}
