import { useState } from 'preact/hooks'
import { accountApi } from '../../lib/api'
import { describeTimeZone, formatDateTime, formatEgp } from '../../lib/format'
import type { AdminCredit, AdminOrganization } from '../../lib/sdk'
import { useResource } from '../../lib/use-resource'
import { Badge, Button, ConfirmDialog, ErrorAlert, PageHeader, Section, Skeleton, SuccessAlert, TextAreaField, statusTone } from '../../ui'
import { CreditForm } from './credit-form'
import { OperatorGate } from './operator-gate'
import { CreditLedger, OrganizationAuditTrail, useCreditLedger } from './organization-records'
import { OrganizationSettings } from './organization-settings'

/** Operators: one organization: its state, suspension, plan and limits, credit top-ups, its credit ledger and audit trail. */
export function AdminOrganizationPage({ id }: { id: string }) {
  const organizationId = decodeURIComponent(id)
  const organization = useResource((signal) => accountApi().admin.organizations.retrieve(organizationId, { signal }), [organizationId])
  const ledger = useCreditLedger(organizationId)
  const [notice, setNotice] = useState<string | null>(null)

  const changed = (next: AdminOrganization, message: string) => {
    organization.setData(() => next)
    setNotice(message)
  }
  const credited = (credit: AdminCredit) => {
    ledger.reload()
    organization.setData((current) => (current ? { ...current, balance_egp: credit.balance_egp } : current))
    setNotice(`Added ${formatEgp(credit.amount_egp)}. The balance is now ${formatEgp(credit.balance_egp)}.`)
  }

  const current = organization.data
  return (
    <OperatorGate title="Organization">
      <p class="breadcrumb">
        <a href="/admin/organizations">Organizations</a>
      </p>
      {current === undefined ? (
        <>
          <PageHeader title="Organization" />
          {organization.problem ? <ErrorAlert problem={organization.problem} onRetry={organization.reload} /> : <Skeleton lines={6} />}
        </>
      ) : (
        <>
          <PageHeader title={current.name} description={<Badge tone={statusTone(current.status)}>{current.status}</Badge>} />
          {notice && <SuccessAlert>{notice}</SuccessAlert>}
          <Facts organization={current} />
          <StatusSection organization={current} onChanged={changed} />
          <OrganizationSettings organization={current} onSaved={(next) => (next ? changed(next, 'Settings saved.') : setNotice('Nothing to save: the settings are as they were.'))} />
          <CreditForm organization={current} onCredited={credited} />
          <CreditLedger organization={current} ledger={ledger} />
          <OrganizationAuditTrail organization={current} />
        </>
      )}
    </OperatorGate>
  )
}

function Facts({ organization }: { organization: AdminOrganization }) {
  return (
    <dl class="details">
      <dt>ID</dt>
      <dd>
        <code>{organization.id}</code>
      </dd>
      <dt>Balance</dt>
      <dd>{formatEgp(organization.balance_egp)}</dd>
      <dt>Plan</dt>
      <dd>{organization.plan_tier}</dd>
      <dt>Billing time zone</dt>
      <dd>{describeTimeZone(organization.billing_time_zone)}</dd>
      <dt>Created</dt>
      <dd>{formatDateTime(organization.created_at, organization.billing_time_zone)}</dd>
    </dl>
  )
}

/** Suspension (with a reason, confirmed) and reactivation. */
function StatusSection({ organization, onChanged }: { organization: AdminOrganization; onChanged: (next: AdminOrganization, message: string) => void }) {
  const [open, setOpen] = useState<'suspend' | 'reactivate' | null>(null)
  const [reason, setReason] = useState('')
  const suspended = organization.status === 'suspended'
  const admin = accountApi().admin.organizations

  return (
    <Section title="Status">
      <p>
        {suspended
          ? 'Suspended: its API keys and its members’ sessions are refused until it is reactivated.'
          : 'Active: its keys and members work. Suspending refuses them at once, on every gateway instance.'}
      </p>
      {suspended ? (
        <Button onClick={() => setOpen('reactivate')}>Reactivate organization</Button>
      ) : (
        <Button variant="danger" onClick={() => setOpen('suspend')}>
          Suspend organization
        </Button>
      )}
      <ConfirmDialog
        open={open === 'suspend'}
        title={`Suspend ${organization.name}?`}
        confirmLabel="Suspend"
        danger
        onClose={() => setOpen(null)}
        onConfirm={async () => {
          const trimmed = reason.trim()
          const next = await admin.suspend(organization.id, trimmed === '' ? {} : { reason: trimmed })
          setReason('')
          onChanged(next, 'The organization is suspended.')
        }}
      >
        <p>Its API keys and its members’ sessions stop working until an operator reactivates it. The reason goes into its audit trail.</p>
        <TextAreaField label="Reason" optional rows={3} value={reason} onInput={(event) => setReason(event.currentTarget.value)} />
      </ConfirmDialog>
      <ConfirmDialog
        open={open === 'reactivate'}
        title={`Reactivate ${organization.name}?`}
        confirmLabel="Reactivate"
        onClose={() => setOpen(null)}
        onConfirm={async () => onChanged(await admin.reactivate(organization.id), 'The organization is active again.')}
      >
        <p>Its API keys and its members’ sessions work again at once.</p>
      </ConfirmDialog>
    </Section>
  )
}
