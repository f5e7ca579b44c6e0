import type { FormState, FormValues } from './form'
import { TextField } from './field'

/**
 * The field of a new password, its hint the gateway's rule (lib/password-policy.ts), and with
 * `confirm` the field that repeats it, labelled "<label> again".
 */
export function NewPasswordFields<V extends FormValues>({ form, name, confirm, label = 'New password' }: { form: FormState<V>; name: keyof V & string; confirm?: keyof V & string; label?: string }) {
  return (
    <>
      <TextField label={label} type="password" autocomplete="new-password" required hint="At least 8 characters." {...form.text(name)} error={form.errors[name]} />
      {confirm && <TextField label={`${label} again`} type="password" autocomplete="new-password" required {...form.text(confirm)} error={form.errors[confirm]} />}
    </>
  )
}
