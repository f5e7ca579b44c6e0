import type { ButtonHTMLAttributes, ComponentChildren } from 'preact'
import { classNames } from './class-names'

export type ButtonVariant = 'primary' | 'secondary' | 'danger' | 'ghost'

export interface ButtonProps extends ButtonHTMLAttributes<HTMLButtonElement> {
  variant?: ButtonVariant
  /** Shows a spinner and refuses clicks while the action runs. */
  busy?: boolean
  small?: boolean
}

/** A button; `type="button"` unless told otherwise, so that it never submits a form by accident. */
export function Button({ variant = 'secondary', busy = false, small = false, type = 'button', class: className, disabled, children, ...rest }: ButtonProps) {
  return (
    <button
      type={type}
      class={classNames('button', `button-${variant}`, small && 'button-small', className as string)}
      disabled={disabled || busy}
      aria-busy={busy || undefined}
      {...rest}
    >
      {busy && <span class="spinner spinner-inline" aria-hidden="true" />}
      {children}
    </button>
  )
}

export interface LinkButtonProps {
  href: string
  variant?: ButtonVariant
  small?: boolean
  class?: string
  children: ComponentChildren
}

/** A link that looks like a button: for actions that open another page. */
export function LinkButton({ href, variant = 'secondary', small = false, class: className, children }: LinkButtonProps) {
  return (
    <a href={href} class={classNames('button', `button-${variant}`, small && 'button-small', className)}>
      {children}
    </a>
  )
}
