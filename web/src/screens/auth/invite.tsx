import { useState } from 'preact/hooks'
import { accountApi, refreshSession, reportError, type ApiProblem } from '../../lib/api'
import { takeFragmentToken } from '../../lib/fragment-token'
import { me, selectOrganization, sessionStatus } from '../../lib/session'
import type { Organization } from '../../lib/sdk'
import { Button, ErrorAlert, LinkButton, PageHeader, SuccessAlert } from '../../ui'
import { LoginForm } from './login-form'

// The invitation's token, kept in memory while the person logs in or signs up on the way.
let pendingToken: string | null = null

/** /invite#token=...: joins the organization of an invitation mail, logging in first if needed. */
export function InvitePage() {
  const [token] = useState(() => {
    pendingToken = takeFragmentToken() ?? pendingToken
    return pendingToken
  })
  const [joined, setJoined] = useState<Organization | null>(null)
  const [problem, setProblem] = useState<ApiProblem | null>(null)
  const [busy, setBusy] = useState(false)

  const accept = async () => {
    setBusy(true)
    setProblem(null)
    try {
      const organization = await accountApi().invites.accept({ token: token! })
      pendingToken = null
      await refreshSession()
      selectOrganization(organization.id)
      setJoined(organization)
    } catch (error) {
      setProblem(reportError(error))
    } finally {
      setBusy(false)
    }
  }

  if (token === null) {
    return (
      <div>
        <PageHeader title="Join an organization" />
        <p>This page needs the link from the invitation mail. Open the link in the mail again.</p>
      </div>
    )
  }
  if (joined !== null) {
    return (
      <div>
        <PageHeader title="Join an organization" />
        <SuccessAlert>
          <p class="alert-title">
            You joined <bdi>{joined.name}</bdi>.
          </p>
        </SuccessAlert>
        <LinkButton variant="primary" href="/">
          Go to the overview
        </LinkButton>
      </div>
    )
  }
  return (
    <div>
      <PageHeader title="Join an organization" description="You were invited to an organization on nilegate." />
      {sessionStatus.value === 'signed-in' ? (
        <>
          <p>
            Accept the invitation as <bdi>{me.value?.email}</bdi>. The invitation is for one e-mail address: log in with that one.
          </p>
          <ErrorAlert problem={problem} />
          <Button variant="primary" busy={busy} onClick={accept}>
            Accept the invitation
          </Button>
        </>
      ) : (
        <>
          <p>Log in with the address the invitation was sent to, then accept it.</p>
          <LoginForm onSignedIn={() => undefined} />
          <p class="muted">
            No account yet? <a href="/signup?next=%2Finvite">Create an account</a> with that address; you come back here afterwards.
          </p>
        </>
      )}
    </div>
  )
}
