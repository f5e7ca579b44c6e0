import { accountApi, refreshSession } from '../../lib/api'
import { emailProblem } from '../../lib/password-policy'
import { csrfToken, csrfTokenOf } from '../../lib/session'
import { Button, Form, TextField, useForm } from '../../ui'

/** E-mail and password; on success the browser holds the session cookie and `onSignedIn` runs. */
export function LoginForm({ onSignedIn, initialEmail = '' }: { onSignedIn: () => void; initialEmail?: string }) {
  const form = useForm({
    initial: { email: initialEmail, password: '' },
    validate: (values) => ({
      email: emailProblem(values.email),
      password: values.password === '' ? 'Enter your password.' : undefined,
    }),
    submit: async (values) => {
      const session = await accountApi().auth.login({ email: values.email.trim(), password: values.password, session: 'cookie' })
      csrfToken.value = csrfTokenOf(session)
      await refreshSession()
      onSignedIn()
    },
  })
  return (
    <Form state={form} label="Log in">
      <TextField label="E-mail address" type="email" autocomplete="username" required {...form.text('email')} error={form.errors.email} />
      <TextField label="Password" type="password" autocomplete="current-password" required {...form.text('password')} error={form.errors.password} />
      <div class="form-actions">
        <Button type="submit" variant="primary" busy={form.submitting}>
          Log in
        </Button>
        <a href="/forgot-password">Forgot your password?</a>
      </div>
    </Form>
  )
}
