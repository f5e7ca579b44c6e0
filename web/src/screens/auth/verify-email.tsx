import { useEffect, useRef, useState } from 'preact/hooks'
import { accountApi, refreshSession, reportError, type ApiProblem } from '../../lib/api'
import { takeFragmentToken } from '../../lib/fragment-token'
import { sessionStatus } from '../../lib/session'
import { ErrorAlert, LinkButton, PageHeader, Spinner, SuccessAlert, VerifyEmailNotice } from '../../ui'

/** /verify-email#token=...: the link of the verification mail. */
export function VerifyEmailPage() {
  const [state, setState] = useState<'verifying' | 'verified' | 'failed' | 'no-token'>('verifying')
  const [problem, setProblem] = useState<ApiProblem | null>(null)
  const started = useRef(false)

  useEffect(() => {
    if (started.current) return
    started.current = true
    const token = takeFragmentToken()
    if (token === null) {
      setState('no-token')
      return
    }
    accountApi()
      .auth.verifyEmail({ token })
      .then(
        async () => {
          setState('verified')
          if (sessionStatus.value === 'signed-in') await refreshSession()
        },
        (error) => {
          setProblem(reportError(error))
          setState('failed')
        },
      )
  }, [])

  const signedIn = sessionStatus.value === 'signed-in'
  return (
    <div>
      <PageHeader title="Verify your e-mail address" />
      {state === 'verifying' && <Spinner label="Verifying your address…" />}
      {state === 'verified' && (
        <>
          <SuccessAlert>
            <p class="alert-title">Your e-mail address is verified.</p>
          </SuccessAlert>
          <LinkButton variant="primary" href={signedIn ? '/' : '/login'}>
            {signedIn ? 'Go to the overview' : 'Log in'}
          </LinkButton>
        </>
      )}
      {state === 'no-token' && <p>This page needs the link from the verification mail. Open the link in the mail again.</p>}
      {state === 'failed' && <ErrorAlert problem={problem} />}
      {(state === 'failed' || state === 'no-token') &&
        (signedIn ? (
          <VerifyEmailNotice message="You can have a new link mailed to you." />
        ) : (
          <p>
            <a href="/login?next=%2F">Log in</a> to have a new link mailed to you.
          </p>
        ))}
    </div>
  )
}
