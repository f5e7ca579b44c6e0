import type { ComponentChildren } from 'preact'
import { useEffect, useId, useRef } from 'preact/hooks'

export interface DialogProps {
  open: boolean
  title: string
  /** Called on Escape, the close button, or `onClose` of the actions. */
  onClose: () => void
  children: ComponentChildren
  /** The buttons at the bottom. */
  actions?: ComponentChildren
  /** Hides the × button (for dialogs that must be answered with their own buttons). */
  hideClose?: boolean
}

/**
 * A modal dialog on the platform's <dialog>: the page behind is inert (focus stays inside),
 * Escape closes it, and focus returns to what opened it.
 */
export function Dialog({ open, title, onClose, children, actions, hideClose }: DialogProps) {
  const ref = useRef<HTMLDialogElement>(null)
  const titleId = useId()
  const opener = useRef<HTMLElement | null>(null)

  useEffect(() => {
    const dialog = ref.current
    if (dialog === null) return
    if (open && !dialog.open) {
      opener.current = document.activeElement as HTMLElement | null
      dialog.showModal()
    } else if (!open && dialog.open) {
      dialog.close()
    }
  }, [open])

  useEffect(
    () => () => {
      // Closed by unmounting: give focus back too.
      opener.current?.focus()
    },
    [],
  )

  const closed = () => {
    opener.current?.focus()
    opener.current = null
  }

  return (
    <dialog
      ref={ref}
      class="dialog"
      aria-labelledby={titleId}
      onCancel={(event) => {
        event.preventDefault()
        onClose()
      }}
      onClose={closed}
    >
      {open && (
        <div class="dialog-body">
          <div class="dialog-header">
            <h2 id={titleId}>{title}</h2>
            {!hideClose && (
              <button type="button" class="icon-button" aria-label="Close" onClick={onClose}>
                <span aria-hidden="true">×</span>
              </button>
            )}
          </div>
          <div class="dialog-content">{children}</div>
          {actions && <div class="dialog-actions">{actions}</div>}
        </div>
      )}
    </dialog>
  )
}
