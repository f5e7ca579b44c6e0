import { useState } from 'preact/hooks'
import { api, refreshSession } from '../../lib/api'
import { formatDateTime } from '../../lib/format'
import { emailProblem } from '../../lib/password-policy'
import { billingTimeZone, can, me, type Role } from '../../lib/session'
import type { Invite, OrganizationUser } from '../../lib/sdk'
import { cursorPage, usePagedList } from '../../lib/use-resource'
import { Badge, Button, ConfirmDialog, ErrorAlert, Form, PageHeader, PagedTable, Section, SelectField, SuccessAlert, TextField, statusTone, useForm, type Column } from '../../ui'
import { reportError, type ApiProblem } from '../../lib/api'
import { RoleMatrix } from './role-matrix'

const roles: Role[] = ['owner', 'admin', 'member', 'reader']

/** The roles the signed-in user may hand out: owners only by owners. */
function grantableRoles(): Role[] {
  return roles.filter((role) => role !== 'owner' || can('owners.manage'))
}

/** /members: the organization's people and invitations. */
export function MembersPage() {
  const manage = can('members.manage')
  const users = usePagedList((cursor) => api().organization.users.page({ after: cursor, limit: 50 }).then(cursorPage), [])
  const invites = usePagedList((cursor) => api().organization.invites.page({ after: cursor, limit: 50 }).then(cursorPage), [])
  const [removing, setRemoving] = useState<OrganizationUser | null>(null)
  const [revoking, setRevoking] = useState<Invite | null>(null)
  const [roleProblem, setRoleProblem] = useState<ApiProblem | null>(null)
  const zone = billingTimeZone.value
  const myId = me.value?.id

  const changeRole = async (user: OrganizationUser, role: Role) => {
    setRoleProblem(null)
    try {
      const updated = await api().organization.users.update(user.id, { role })
      users.update((items) => items.map((item) => (item.id === updated.id ? updated : item)))
      if (user.id === myId) await refreshSession()
    } catch (error) {
      setRoleProblem(reportError(error))
      users.reload()
    }
  }

  const userColumns: Column<OrganizationUser>[] = [
    { header: 'Name', cell: (user) => <bdi>{user.name ?? '—'}</bdi> },
    {
      header: 'E-mail address',
      cell: (user) => (
        <>
          <bdi>{user.email}</bdi> {user.id === myId && <Badge tone="info">you</Badge>}
        </>
      ),
    },
    {
      header: 'Role',
      cell: (user) => {
        const editable = manage && (user.role !== 'owner' || can('owners.manage'))
        if (!editable) return <Badge>{user.role}</Badge>
        return (
          <select aria-label={`Role of ${user.email}`} value={user.role} onChange={(event) => changeRole(user, event.currentTarget.value as Role)}>
            {grantableRoles().map((role) => (
              <option key={role} value={role}>
                {role}
              </option>
            ))}
          </select>
        )
      },
    },
    { header: 'Added', cell: (user) => formatDateTime(user.added_at, zone) },
    {
      header: 'Actions',
      hiddenHeader: true,
      cell: (user) =>
        user.id === myId ? (
          <Button small onClick={() => setRemoving(user)}>
            Leave organization
          </Button>
        ) : manage && (user.role !== 'owner' || can('owners.manage')) ? (
          <Button small variant="danger" onClick={() => setRemoving(user)} aria-label={`Remove ${user.email}`}>
            Remove
          </Button>
        ) : null,
    },
  ]

  const inviteColumns: Column<Invite>[] = [
    { header: 'E-mail address', cell: (invite) => <bdi>{invite.email}</bdi> },
    { header: 'Role', cell: (invite) => invite.role },
    { header: 'Status', cell: (invite) => <Badge tone={statusTone(invite.status)}>{invite.status}</Badge> },
    { header: 'Invited', cell: (invite) => formatDateTime(invite.invited_at, zone) },
    { header: 'Expires', cell: (invite) => formatDateTime(invite.expires_at, zone) },
    {
      header: 'Actions',
      hiddenHeader: true,
      cell: (invite) =>
        manage && invite.status === 'pending' ? (
          <Button small variant="danger" onClick={() => setRevoking(invite)} aria-label={`Revoke the invitation of ${invite.email}`}>
            Revoke
          </Button>
        ) : null,
    },
  ]

  return (
    <div>
      <PageHeader title="Members" description="The people of this organization and what their role lets them do." />
      <Section title="People">
        <ErrorAlert problem={roleProblem} />
        <PagedTable caption="Members" hideCaption list={users} columns={userColumns} rowKey={(user) => user.id} />
      </Section>
      <Section title="Invitations">
        {manage && <InviteForm onInvited={(invite) => invites.update((items) => [invite, ...items])} />}
        <PagedTable
          caption="Invitations"
          hideCaption
          list={invites}
          columns={inviteColumns}
          rowKey={(invite) => invite.id}
          empty={<p class="muted">No invitations.</p>}
        />
      </Section>
      <Section title="Roles">
        <RoleMatrix />
      </Section>
      <ConfirmDialog
        open={removing !== null}
        title={removing?.id === myId ? 'Leave this organization?' : 'Remove this member?'}
        confirmLabel={removing?.id === myId ? 'Leave organization' : 'Remove member'}
        danger
        onClose={() => setRemoving(null)}
        onConfirm={async () => {
          const user = removing!
          await api().organization.users.remove(user.id)
          if (user.id === myId) {
            await refreshSession()
            return
          }
          users.update((items) => items.filter((item) => item.id !== user.id))
        }}
      >
        <p>
          {removing?.id === myId ? 'You lose access to its projects, keys and usage.' : <><bdi>{removing?.email}</bdi> loses access to the organization at once.</>}
        </p>
      </ConfirmDialog>
      <ConfirmDialog
        open={revoking !== null}
        title="Revoke this invitation?"
        confirmLabel="Revoke invitation"
        danger
        onClose={() => setRevoking(null)}
        onConfirm={async () => {
          const invite = revoking!
          await api().organization.invites.revoke(invite.id)
          invites.update((items) => items.map((item) => (item.id === invite.id ? { ...item, status: 'revoked' as const } : item)))
        }}
      >
        <p>
          The link mailed to <bdi>{revoking?.email}</bdi> stops working.
        </p>
      </ConfirmDialog>
    </div>
  )
}

function InviteForm({ onInvited }: { onInvited: (invite: Invite) => void }) {
  const [sent, setSent] = useState<string | null>(null)
  const form = useForm({
    initial: { email: '', role: 'member' },
    validate: (values) => ({ email: emailProblem(values.email) }),
    submit: async (values) => {
      const invite = await api().organization.invites.create({ email: values.email.trim(), role: values.role as Role })
      onInvited(invite)
      setSent(invite.email)
      form.reset()
    },
  })
  return (
    <Form state={form} label="Invite someone" class="form">
      {sent && (
        <SuccessAlert>
          Invitation mailed to <bdi>{sent}</bdi>.
        </SuccessAlert>
      )}
      <div class="inline-form">
        <TextField label="E-mail address to invite" type="email" autocomplete="off" required {...form.text('email')} error={form.errors.email} />
        <SelectField label="Role" value={form.values.role} onChange={(event) => form.set('role', event.currentTarget.value)} error={form.errors.role}>
          {grantableRoles().map((role) => (
            <option key={role} value={role}>
              {role}
            </option>
          ))}
        </SelectField>
        <Button type="submit" variant="primary" busy={form.submitting}>
          Send invitation
        </Button>
      </div>
    </Form>
  )
}
