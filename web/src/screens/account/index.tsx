import { useState } from 'preact/hooks'
import { accountApi, logOut, reportError } from '../../lib/api'
import { formatDateTime, localTimeZone } from '../../lib/format'
import { passwordProblem } from '../../lib/password-policy'
import type { AuthSession } from '../../lib/sdk'
import { me } from '../../lib/session'
import { cursorPage, usePagedList } from '../../lib/use-resource'
import { Badge, Button, ConfirmDialog, Form, NewPasswordFields, PageHeader, PagedTable, Section, SuccessAlert, TextField, useForm, type Column } from '../../ui'

/** /account: who is signed in, their password, and their sessions. */
export function AccountPage() {
  const user = me.value!
  const sessions = usePagedList((cursor) => accountApi().auth.listSessions({ after: cursor, limit: 20 }).then(cursorPage), [])
  const [ending, setEnding] = useState<AuthSession | null>(null)

  const columns: Column<AuthSession>[] = [
    {
      header: 'Device',
      cell: (session) => (
        <>
          <span dir="auto">{session.user_agent ? describeAgent(session.user_agent) : 'Unknown device'}</span>{' '}
          {session.current && <Badge tone="info">This browser</Badge>}
        </>
      ),
    },
    { header: 'IP address', cell: (session) => <span class="mono">{session.ip_address ?? '—'}</span> },
    { header: 'Started', cell: (session) => formatDateTime(session.created_at, localTimeZone) },
    { header: 'Expires', cell: (session) => formatDateTime(session.expires_at, localTimeZone) },
    {
      header: 'Actions',
      hiddenHeader: true,
      cell: (session) =>
        session.current ? (
          <Button small onClick={() => logOut().catch(reportError)}>
            Log out
          </Button>
        ) : (
          <Button small variant="danger" onClick={() => setEnding(session)} aria-label={`End session started ${formatDateTime(session.created_at, localTimeZone)}`}>
            End session
          </Button>
        ),
    },
  ]

  return (
    <div>
      <PageHeader title="Account" />
      <Section title="Your account">
        <dl class="details">
          <dt>Name</dt>
          <dd>
            <bdi>{user.name ?? '—'}</bdi>
          </dd>
          <dt>E-mail address</dt>
          <dd>
            <bdi>{user.email}</bdi> {user.email_verified ? <Badge tone="success">verified</Badge> : <Badge tone="warning">not verified</Badge>}
          </dd>
          <dt>Member since</dt>
          <dd>{formatDateTime(user.created_at, localTimeZone)}</dd>
        </dl>
      </Section>
      <Section title="Change your password">
        <ChangePasswordForm onChanged={sessions.reload} />
      </Section>
      <Section title="Sessions">
        <p class="muted">Where you are logged in. Ending a session logs that browser or client out at once. Times are in {localTimeZone}.</p>
        <PagedTable caption="Your active sessions" hideCaption list={sessions} columns={columns} rowKey={(session) => session.id} />
      </Section>
      <ConfirmDialog
        open={ending !== null}
        title="End this session?"
        confirmLabel="End session"
        danger
        onClose={() => setEnding(null)}
        onConfirm={async () => {
          await accountApi().auth.revokeSession(ending!.id)
          sessions.update((items) => items.filter((session) => session.id !== ending!.id))
        }}
      >
        <p>
          The {ending?.user_agent ? describeAgent(ending.user_agent) : 'device'} session from {ending?.ip_address ?? 'an unknown address'} is logged out at once.
        </p>
      </ConfirmDialog>
    </div>
  )
}

function ChangePasswordForm({ onChanged }: { onChanged: () => void }) {
  const [changed, setChanged] = useState(false)
  const form = useForm({
    initial: { current_password: '', new_password: '', confirm: '' },
    validate: (values) => ({
      current_password: values.current_password === '' ? 'Enter your current password.' : undefined,
      new_password: passwordProblem(values.new_password) ?? (values.new_password === values.current_password ? 'Choose a password other than the current one.' : undefined),
      confirm: values.confirm !== values.new_password ? 'The two new passwords differ.' : undefined,
    }),
    submit: async (values) => {
      setChanged(false)
      await accountApi().auth.changePassword({ current_password: values.current_password, new_password: values.new_password })
      form.reset()
      setChanged(true)
      onChanged()
    },
  })
  return (
    <Form state={form} label="Change your password">
      {/* Tells password managers whose password this is. */}
      <input type="email" name="username" autocomplete="username" value={me.value?.email ?? ''} readOnly hidden />
      {changed && <SuccessAlert>Your password is changed. Your other sessions have ended; this one goes on.</SuccessAlert>}
      <div class="form-grid">
        <TextField label="Current password" type="password" autocomplete="current-password" required {...form.text('current_password')} error={form.errors.current_password} />
        <NewPasswordFields form={form} name="new_password" confirm="confirm" />
      </div>
      <div class="form-actions">
        <Button type="submit" variant="primary" busy={form.submitting}>
          Change password
        </Button>
      </div>
    </Form>
  )
}

/** "Firefox on Linux" from a user agent string, or the string itself when it says nothing we know. */
function describeAgent(agent: string): string {
  const browser = /Edg\//.test(agent)
    ? 'Edge'
    : /Firefox\//.test(agent)
      ? 'Firefox'
      : /Chrom(e|ium)\//.test(agent)
        ? 'Chrome'
        : /Safari\//.test(agent)
          ? 'Safari'
          : null
  const system = /Android/.test(agent) ? 'Android' : /iPhone|iPad/.test(agent) ? 'iOS' : /Windows/.test(agent) ? 'Windows' : /Mac OS X/.test(agent) ? 'macOS' : /Linux/.test(agent) ? 'Linux' : null
  if (browser === null) return agent.length > 60 ? `${agent.slice(0, 60)}…` : agent
  return system ? `${browser} on ${system}` : browser
}
