import { useState } from 'preact/hooks'
import { accountApi } from '../../lib/api'
import { emailProblem } from '../../lib/password-policy'
import { Button, Form, PageHeader, SuccessAlert, TextField, useForm } from '../../ui'

/** /forgot-password: mails a reset link (the answer never says whether the address has an account). */
export function ForgotPasswordPage() {
  const [sentTo, setSentTo] = useState<string | null>(null)
  const form = useForm({
    initial: { email: '' },
    validate: (values) => ({ email: emailProblem(values.email) }),
    submit: async (values) => {
      await accountApi().auth.requestPasswordReset({ email: values.email.trim() })
      setSentTo(values.email.trim())
    },
  })

  return (
    <div>
      <PageHeader title="Reset your password" />
      {sentTo !== null ? (
        <SuccessAlert>
          <p class="alert-title">Check your mail.</p>
          <p>
            If an account uses <bdi>{sentTo}</bdi>, a link to choose a new password is on its way. It works for one hour, once.
          </p>
        </SuccessAlert>
      ) : (
        <Form state={form} label="Reset your password">
          <p>Enter the address of your account; we mail you a link to choose a new password.</p>
          <TextField label="E-mail address" type="email" autocomplete="email" required {...form.text('email')} error={form.errors.email} />
          <div class="form-actions">
            <Button type="submit" variant="primary" busy={form.submitting}>
              Send the link
            </Button>
          </div>
        </Form>
      )}
      <p class="muted">
        Remembered it? <a href="/login">Log in</a>.
      </p>
    </div>
  )
}
