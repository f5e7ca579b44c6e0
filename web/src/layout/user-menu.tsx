import { useEffect, useRef, useState } from 'preact/hooks'
import { useLocation } from 'preact-iso'
import { describeError, logOut } from '../lib/api'
import { me } from '../lib/session'

/** The signed-in user's menu: their account page and logging out. */
export function UserMenu() {
  const [open, setOpen] = useState(false)
  const [failure, setFailure] = useState<string | null>(null)
  const root = useRef<HTMLDivElement>(null)
  const button = useRef<HTMLButtonElement>(null)
  const { path } = useLocation()
  const user = me.value

  useEffect(() => setOpen(false), [path])

  useEffect(() => {
    if (!open) return
    const onPointer = (event: PointerEvent) => {
      if (!root.current?.contains(event.target as Node)) setOpen(false)
    }
    const onKey = (event: KeyboardEvent) => {
      if (event.key === 'Escape') {
        setOpen(false)
        button.current?.focus()
      }
    }
    document.addEventListener('pointerdown', onPointer)
    document.addEventListener('keydown', onKey)
    return () => {
      document.removeEventListener('pointerdown', onPointer)
      document.removeEventListener('keydown', onKey)
    }
  }, [open])

  if (user === null) return null
  return (
    <div class="user-menu" ref={root}>
      <button type="button" class="user-menu-button" aria-expanded={open} aria-controls="user-menu" ref={button} onClick={() => setOpen(!open)}>
        <span class="visually-hidden">Account menu for </span>
        <bdi>{user.name ?? user.email}</bdi>
      </button>
      <div id="user-menu" class="user-menu-panel" hidden={!open}>
        <p class="user-menu-email">
          <bdi>{user.email}</bdi>
        </p>
        <a href="/account">Account and sessions</a>
        <button
          type="button"
          class="link-button"
          onClick={async () => {
            try {
              await logOut()
            } catch (error) {
              setFailure(describeError(error).message)
            }
          }}
        >
          Log out
        </button>
        {failure && (
          <p class="field-error" role="alert">
            {failure}
          </p>
        )}
      </div>
    </div>
  )
}
