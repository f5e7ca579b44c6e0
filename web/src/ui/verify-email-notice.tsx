import { useState } from 'preact/hooks'
import { accountApi, describeError, type ApiProblem } from '../lib/api'
import { me } from '../lib/session'
import { Button } from './button'

/** Says the signed-in user's address must be verified first, with a button that mails a new link. */
export function VerifyEmailNotice({ message }: { message?: string }) {
  const [state, setState] = useState<'idle' | 'sending' | 'sent'>('idle')
  const [problem, setProblem] = useState<ApiProblem | null>(null)
  const email = me.value?.email

  async function resend() {
    setState('sending')
    setProblem(null)
    try {
      await accountApi().auth.resendVerification()
      setState('sent')
    } catch (error) {
      setProblem(describeError(error))
      setState('idle')
    }
  }

  return (
    <section class="alert alert-warning" aria-label="E-mail verification">
      <p class="alert-title">{message ?? 'Verify your e-mail address first.'}</p>
      <p>
        Check your e-mail: open the link we sent{email ? <> to <bdi>{email}</bdi></> : null}. The mail also tells you how to verify through the API.
      </p>
      {state === 'sent' ? (
        <p role="status">A new verification mail is on its way.</p>
      ) : (
        <Button small busy={state === 'sending'} onClick={resend}>
          Send the verification mail again
        </Button>
      )}
      {problem && (
        <p class="field-error">
          {problem.message} {problem.hint}
        </p>
      )}
    </section>
  )
}
