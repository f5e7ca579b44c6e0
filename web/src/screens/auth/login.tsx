import { useEffect } from 'preact/hooks'
import { useLocation } from 'preact-iso'
import { navigateTo, safeNextPath } from '../../lib/api'
import { sessionStatus } from '../../lib/session'
import { PageHeader } from '../../ui'
import { LoginForm } from './login-form'

/** /login: back to the page in `next` afterwards (a page of this site only). */
export function LoginPage() {
  const { query } = useLocation()
  const next = safeNextPath(query.next)

  useEffect(() => {
    if (sessionStatus.value === 'signed-in') navigateTo(next, true)
  }, [sessionStatus.value])

  return (
    <div>
      <PageHeader title="Log in" />
      <LoginForm onSignedIn={() => navigateTo(next, true)} />
      <p class="muted">
        New here? <a href={next === '/' ? '/signup' : `/signup?next=${encodeURIComponent(next)}`}>Create an account</a>.
      </p>
    </div>
  )
}
