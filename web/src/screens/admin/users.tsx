import { useState } from 'preact/hooks'
import { accountApi } from '../../lib/api'
import { formatDateTime } from '../../lib/format'
import { me } from '../../lib/session'
import type { AdminUser } from '../../lib/sdk'
import { cursorPage, usePagedList } from '../../lib/use-resource'
import { Badge, Button, ConfirmDialog, EmptyState, PageHeader, PagedTable, SearchForm, SuccessAlert, TextField, statusTone, type Column } from '../../ui'
import { localTimeZone, OperatorGate } from './operator-gate'

/** Operators: every user of the platform, found by e-mail address; disable and enable accounts. */
export function AdminUsersPage() {
  const [email, setEmail] = useState('')
  const [applied, setApplied] = useState('')
  const [acting, setActing] = useState<{ user: AdminUser; action: 'disable' | 'enable' } | null>(null)
  const [notice, setNotice] = useState<string | null>(null)
  const list = usePagedList(
    (cursor, signal) => accountApi().admin.users.page(applied === '' ? { after: cursor, limit: 25 } : { after: cursor, limit: 25, email: applied }, { signal }).then(cursorPage),
    [applied],
  )
  const selfId = me.value?.id

  const columns: Column<AdminUser>[] = [
    { header: 'E-mail', cell: (user) => user.email },
    { header: 'Name', cell: (user) => <span dir="auto">{user.name}</span> },
    {
      header: 'Status',
      cell: (user) => (
        <>
          <Badge tone={statusTone(user.status)}>{user.status}</Badge> {user.is_operator && <Badge tone="info">operator</Badge>}{' '}
          {!user.email_verified && <Badge tone="warning">unverified</Badge>}
        </>
      ),
    },
    { header: 'Created', cell: (user) => formatDateTime(user.created_at, localTimeZone) },
    {
      header: 'Actions',
      hiddenHeader: true,
      cell: (user) =>
        user.status === 'deleted' || user.id === selfId ? null : user.status === 'disabled' ? (
          <Button small onClick={() => setActing({ user, action: 'enable' })} aria-label={`Enable ${user.email}`}>
            Enable
          </Button>
        ) : (
          <Button small variant="danger" onClick={() => setActing({ user, action: 'disable' })} aria-label={`Disable ${user.email}`}>
            Disable
          </Button>
        ),
    },
  ]

  const act = async () => {
    if (acting === null) return
    const users = accountApi().admin.users
    const next = acting.action === 'disable' ? await users.disable(acting.user.id) : await users.enable(acting.user.id)
    list.update((items) => items.map((user) => (user.id === next.id ? next : user)))
    setNotice(acting.action === 'disable' ? `${next.email} is disabled: their sessions ended.` : `${next.email} can log in again.`)
  }

  return (
    <OperatorGate title="Users">
      <PageHeader title="Users" description="Every account on the platform. Disabling one ends its sessions and refuses new ones." />
      <SearchForm label="Find a user" onSearch={() => setApplied(email.trim())}>
        <TextField label="E-mail address" type="search" autocomplete="off" hint="The whole address; empty lists everyone." value={email} onInput={(event) => setEmail(event.currentTarget.value)} />
      </SearchForm>
      {notice && <SuccessAlert>{notice}</SuccessAlert>}
      <PagedTable
        list={list}
        caption="Users"
        hideCaption
        columns={columns}
        rowKey={(user) => user.id}
        empty={<EmptyState title={applied ? `No user has the address ${applied}.` : 'No users yet.'} />}
      />
      <ConfirmDialog
        open={acting !== null}
        title={acting?.action === 'disable' ? `Disable ${acting.user.email}?` : `Enable ${acting?.user.email ?? ''}?`}
        confirmLabel={acting?.action === 'disable' ? 'Disable' : 'Enable'}
        danger={acting?.action === 'disable'}
        onClose={() => setActing(null)}
        onConfirm={act}
      >
        <p>{acting?.action === 'disable' ? 'Their sessions end at once and they cannot log in until enabled again. Their organizations keep working.' : 'They can log in again.'}</p>
      </ConfirmDialog>
    </OperatorGate>
  )
}
