import type { ComponentChildren, TargetedSubmitEvent } from 'preact'
import { useRef, useState } from 'preact/hooks'
import { reportError, type ApiProblem } from '../lib/api'
import { ErrorAlert } from './error-alert'

export type FormValues = Record<string, string | boolean | string[]>
export type FormErrors<V extends FormValues> = Partial<Record<keyof V & string, string>>

export interface FormOptions<V extends FormValues> {
  initial: V
  /** Messages per field for values that must not be sent; empty when all is well. */
  validate?: (values: V) => FormErrors<V>
  /** Sends the values; what it throws is shown at the field the server names, or above the form. */
  submit: (values: V) => Promise<unknown>
  /** The field a server `param` belongs to, when its name differs from the field's. */
  fieldOf?: (param: string) => (keyof V & string) | null
}

/** A form's state: values, errors per field, the error of the whole form, and whether it is sending. */
export interface FormState<V extends FormValues> {
  values: V
  errors: FormErrors<V>
  problem: ApiProblem | null
  submitting: boolean
  set: <K extends keyof V & string>(name: K, value: V[K]) => void
  /** `value` and `onInput` for a text input bound to `name`. */
  text: (name: keyof V & string) => { name: string; value: string; onInput: (event: { currentTarget: { value: string } }) => void }
  onSubmit: (event: TargetedSubmitEvent<HTMLFormElement>) => Promise<void>
  reset: (values?: V) => void
}

/**
 * A form that checks its values before sending, and shows the server's error at the field its
 * `param` names (focusing it), or above the form when no field matches.
 */
export function useForm<V extends FormValues>(options: FormOptions<V>): FormState<V> {
  const [values, setValues] = useState<V>(options.initial)
  const [errors, setErrors] = useState<FormErrors<V>>({})
  const [problem, setProblem] = useState<ApiProblem | null>(null)
  const [submitting, setSubmitting] = useState(false)
  const latest = useRef(values)
  latest.current = values

  const set = <K extends keyof V & string>(name: K, value: V[K]) => {
    latest.current = { ...latest.current, [name]: value }
    setValues(latest.current)
    setErrors((current) => (current[name] ? { ...current, [name]: undefined } : current))
  }

  const fieldOfParam = (param: string): (keyof V & string) | null => {
    const mapped = options.fieldOf?.(param)
    if (mapped) return mapped
    const head = param.split(/[.[]/)[0] ?? param
    return head in latest.current ? (head as keyof V & string) : null
  }

  const onSubmit = async (event: TargetedSubmitEvent<HTMLFormElement>) => {
    event.preventDefault()
    const form = event.currentTarget
    const invalid = options.validate?.(latest.current) ?? {}
    if (Object.values(invalid).some(Boolean)) {
      setErrors(invalid)
      setProblem(null)
      focusFirstInvalid(form)
      return
    }
    setErrors({})
    setProblem(null)
    setSubmitting(true)
    try {
      await options.submit(latest.current)
    } catch (error) {
      const found = reportError(error)
      const field = found.param ? fieldOfParam(found.param) : null
      if (field) {
        setErrors({ [field]: found.hint ? `${found.message} ${found.hint}` : found.message } as FormErrors<V>)
        focusFirstInvalid(form)
      } else {
        setProblem(found)
      }
    } finally {
      setSubmitting(false)
    }
  }

  return {
    values,
    errors,
    problem,
    submitting,
    set,
    text: (name) => ({ name, value: String(values[name] ?? ''), onInput: (event) => set(name, event.currentTarget.value as V[typeof name]) }),
    onSubmit,
    reset: (next) => {
      latest.current = next ?? options.initial
      setValues(latest.current)
      setErrors({})
      setProblem(null)
    },
  }
}

/** Moves focus to the first control marked invalid, once the errors are on screen. */
function focusFirstInvalid(form: HTMLFormElement) {
  requestAnimationFrame(() => form.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus())
}

/** A form bound to `state`: its error above the fields, no browser validation bubbles (ours say more). */
export function Form<V extends FormValues>({ state, children, label, class: className }: { state: FormState<V>; children: ComponentChildren; label?: string; class?: string }) {
  return (
    <form class={className ?? 'form'} onSubmit={state.onSubmit} noValidate aria-label={label}>
      <ErrorAlert problem={state.problem} />
      {children}
    </form>
  )
}
