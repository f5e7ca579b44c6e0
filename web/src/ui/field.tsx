import type { ComponentChildren, VNode } from 'preact'
import { useId } from 'preact/hooks'

/** What a field hands its control: its id, and the hint and error that describe it. */
export interface ControlProps {
  id: string
  'aria-describedby'?: string
  'aria-invalid'?: true
  required?: boolean
}

export interface FieldProps {
  label: ComponentChildren
  hint?: ComponentChildren
  /** The error to show under the control (a validation message, or the server's for this `param`). */
  error?: string | null
  required?: boolean
  /** Says "(optional)" beside the label. */
  optional?: boolean
  children: (control: ControlProps) => VNode
}

/** A labelled control with its hint and error, tied to it for assistive technology. */
export function Field({ label, hint, error, required, optional, children }: FieldProps) {
  const id = useId()
  const hintId = hint ? `${id}-hint` : undefined
  const errorId = error ? `${id}-error` : undefined
  const describedBy = [hintId, errorId].filter(Boolean).join(' ') || undefined
  return (
    <div class="field">
      <label for={id}>
        {label}
        {optional && <span class="optional"> (optional)</span>}
      </label>
      {children({ id, 'aria-describedby': describedBy, 'aria-invalid': error ? true : undefined, required })}
      {hint && (
        <p id={hintId} class="field-hint">
          {hint}
        </p>
      )}
      {error && (
        <p id={errorId} class="field-error">
          {error}
        </p>
      )}
    </div>
  )
}

type FieldChrome = Omit<FieldProps, 'children'>

/** What a text field passes on to its <input>. */
export interface InputProps {
  name?: string
  value?: string
  onInput?: (event: { currentTarget: HTMLInputElement }) => void
  type?: 'text' | 'email' | 'password' | 'number' | 'date' | 'datetime-local' | 'search' | 'url' | 'tel'
  autocomplete?: string
  placeholder?: string
  inputMode?: 'text' | 'decimal' | 'numeric' | 'email' | 'search' | 'url'
  min?: string | number
  max?: string | number
  step?: string | number
  disabled?: boolean
  readOnly?: boolean
  autoFocus?: boolean
  spellcheck?: boolean
  /** The id of a <datalist> of suggestions. */
  list?: string
}

/** A labelled text input; `dir="auto"` so that Arabic text runs right to left. */
export function TextField({ label, hint, error, required, optional, ...input }: FieldChrome & InputProps) {
  // Preact types each input type apart; the props were checked as InputProps already.
  return (
    <Field label={label} hint={hint} error={error} required={required} optional={optional}>
      {(control) => <input dir="auto" {...(input as object)} {...control} />}
    </Field>
  )
}

/** A labelled multi-line text input. */
export function TextAreaField({
  label,
  hint,
  error,
  required,
  optional,
  ...textarea
}: FieldChrome & { name?: string; value?: string; rows?: number; placeholder?: string; disabled?: boolean; onInput?: (event: { currentTarget: HTMLTextAreaElement }) => void }) {
  return (
    <Field label={label} hint={hint} error={error} required={required} optional={optional}>
      {(control) => <textarea dir="auto" {...textarea} {...control} />}
    </Field>
  )
}

/** A labelled select. */
export function SelectField({
  label,
  hint,
  error,
  required,
  optional,
  children,
  ...select
}: FieldChrome & { name?: string; value?: string; disabled?: boolean; children: ComponentChildren; onChange?: (event: { currentTarget: HTMLSelectElement }) => void }) {
  return (
    <Field label={label} hint={hint} error={error} required={required} optional={optional}>
      {(control) => (
        <select {...select} {...control}>
          {children}
        </select>
      )}
    </Field>
  )
}

/** A checkbox with its label beside it. */
export function CheckboxField({ label, hint, checked, onChange, name, disabled }: { label: ComponentChildren; hint?: ComponentChildren; checked: boolean; onChange: (checked: boolean) => void; name?: string; disabled?: boolean }) {
  const id = useId()
  return (
    <div class="checkbox-field">
      <input
        type="checkbox"
        id={id}
        name={name}
        checked={checked}
        disabled={disabled}
        aria-describedby={hint ? `${id}-hint` : undefined}
        onChange={(event) => onChange(event.currentTarget.checked)}
      />
      <label for={id}>{label}</label>
      {hint && (
        <p id={`${id}-hint`} class="field-hint">
          {hint}
        </p>
      )}
    </div>
  )
}
