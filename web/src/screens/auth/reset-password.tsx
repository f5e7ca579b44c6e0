import { useState } from 'preact/hooks'
import { accountApi } from '../../lib/api'
import { takeFragmentToken } from '../../lib/fragment-token'
import { passwordProblem } from '../../lib/password-policy'
import { signOut } from '../../lib/session'
import { Button, Form, LinkButton, NewPasswordFields, PageHeader, SuccessAlert, useForm } from '../../ui'

/** /reset-password#token=...: the link of the reset mail. */
export function ResetPasswordPage() {
  const [token] = useState(takeFragmentToken)
  const [done, setDone] = useState(false)
  const form = useForm({
    initial: { new_password: '', confirm: '' },
    validate: (values) => ({
      new_password: passwordProblem(values.new_password),
      confirm: values.confirm !== values.new_password ? 'The two passwords differ.' : undefined,
    }),
    fieldOf: (param) => (param === 'token' ? null : param === 'new_password' ? 'new_password' : null),
    submit: async (values) => {
      await accountApi().auth.confirmPasswordReset({ token: token!, new_password: values.new_password })
      // Every session of the account ended, this browser's too.
      signOut()
      setDone(true)
    },
  })

  if (token === null) {
    return (
      <div>
        <PageHeader title="Choose a new password" />
        <p>This page needs the link from the password reset mail. Open the link in the mail again, or ask for a new one.</p>
        <LinkButton href="/forgot-password">Ask for a new link</LinkButton>
      </div>
    )
  }
  return (
    <div>
      <PageHeader title="Choose a new password" />
      {done ? (
        <>
          <SuccessAlert>
            <p class="alert-title">Your password is changed.</p>
            <p>Every session of your account has ended; log in with the new password.</p>
          </SuccessAlert>
          <LinkButton variant="primary" href="/login">
            Log in
          </LinkButton>
        </>
      ) : (
        <Form state={form} label="Choose a new password">
          <NewPasswordFields form={form} name="new_password" confirm="confirm" />
          <div class="form-actions">
            <Button type="submit" variant="primary" busy={form.submitting}>
              Set the new password
            </Button>
          </div>
        </Form>
      )}
    </div>
  )
}
