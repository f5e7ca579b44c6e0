import { useLocation } from 'preact-iso'
import { accountApi, navigateTo, refreshSession, safeNextPath } from '../../lib/api'
import { emailProblem, passwordProblem } from '../../lib/password-policy'
import { csrfToken, csrfTokenOf } from '../../lib/session'
import { Button, Form, NewPasswordFields, PageHeader, TextField, useForm } from '../../ui'

/** /signup: creates the account, logs in, and mails the verification link. */
export function SignupPage() {
  const { query } = useLocation()
  const next = safeNextPath(query.next)
  const form = useForm({
    initial: { name: '', email: '', password: '' },
    validate: (values) => ({
      name: values.name.length > 200 ? 'Use at most 200 characters.' : undefined,
      email: emailProblem(values.email),
      password: passwordProblem(values.password),
    }),
    submit: async (values) => {
      const email = values.email.trim()
      const name = values.name.trim()
      await accountApi().auth.signup({ email, password: values.password, ...(name ? { name } : {}) })
      const session = await accountApi().auth.login({ email, password: values.password, session: 'cookie' })
      csrfToken.value = csrfTokenOf(session)
      await refreshSession()
      navigateTo(next, true)
    },
  })

  return (
    <div>
      <PageHeader title="Create your account" description="We mail you a link to verify your address." />
      <Form state={form} label="Create your account">
        <TextField label="Your name" optional autocomplete="name" {...form.text('name')} error={form.errors.name} />
        <TextField label="E-mail address" type="email" autocomplete="email" required {...form.text('email')} error={form.errors.email} />
        <NewPasswordFields form={form} name="password" label="Password" />
        <div class="form-actions">
          <Button type="submit" variant="primary" busy={form.submitting}>
            Create account
          </Button>
        </div>
      </Form>
      <p class="muted">
        Already have an account? <a href={next === '/' ? '/login' : `/login?next=${encodeURIComponent(next)}`}>Log in</a>.
      </p>
    </div>
  )
}
