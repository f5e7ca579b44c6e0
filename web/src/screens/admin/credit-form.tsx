import { useRef, useState } from 'preact/hooks'
import { accountApi, reportError, type ApiProblem } from '../../lib/api'
import { formatEgp } from '../../lib/format'
import type { AdminCredit, AdminOrganization } from '../../lib/sdk'
import { Button, Dialog, ErrorAlert, Section, TextAreaField, TextField } from '../../ui'
import { parseCreditAmount, type CreditAmount } from './credit-amount'

/** What one top-up sends: the same key for every try of the same amount and reason. */
interface PendingCredit {
  amount: CreditAmount
  note: string
  idempotencyKey: string
}

/**
 * The credit top-up of one organization: an amount in EGP (exact, checked before sending), a
 * reason for the audit trail, and an idempotency key made when the top-up is confirmed and reused
 * by every retry of it, so that a top-up whose answer was lost is never applied twice.
 */
export function CreditForm({ organization, onCredited }: { organization: AdminOrganization; onCredited: (credit: AdminCredit) => void }) {
  const [amountText, setAmountText] = useState('')
  const [note, setNote] = useState('')
  const [errors, setErrors] = useState<{ amount?: string; note?: string }>({})
  const [confirming, setConfirming] = useState<PendingCredit | null>(null)
  const [sending, setSending] = useState(false)
  const [problem, setProblem] = useState<ApiProblem | null>(null)
  // Kept across tries of the same top-up; a new amount or reason is a new top-up with a new key.
  const pending = useRef<PendingCredit | null>(null)

  const review = (event: Event) => {
    event.preventDefault()
    const amount = parseCreditAmount(amountText)
    const reason = note.trim()
    const found = { amount: 'error' in amount ? amount.error : undefined, note: reason === '' ? 'Say why the credit is added: it goes into the audit trail.' : undefined }
    setErrors(found)
    if ('error' in amount || found.note) return
    const same = pending.current !== null && pending.current.amount.decimal === amount.decimal && pending.current.note === reason
    if (!same) pending.current = { amount, note: reason, idempotencyKey: crypto.randomUUID() }
    setProblem(null)
    setConfirming(pending.current)
  }

  const send = async () => {
    const credit = confirming
    if (credit === null) return
    setSending(true)
    setProblem(null)
    try {
      const answer = await accountApi().admin.organizations.credit(organization.id, { amount_egp: credit.amount.decimal, note: credit.note }, { idempotencyKey: credit.idempotencyKey })
      pending.current = null
      setConfirming(null)
      setAmountText('')
      setNote('')
      onCredited(answer)
    } catch (error) {
      const found = reportError(error)
      setConfirming(null)
      if (found.param === 'amount_egp') setErrors({ amount: found.message })
      else if (found.param === 'note') setErrors({ note: found.message })
      else setProblem(found)
    } finally {
      setSending(false)
    }
  }

  return (
    <Section title="Credit">
      <form class="form narrow-form" aria-label="Add credit" noValidate onSubmit={review}>
        <ErrorAlert problem={problem}>
          {pending.current && <p>Sending the same amount and reason again retries this top-up: it is applied once at most.</p>}
        </ErrorAlert>
        <TextField
          label="Amount (EGP)"
          inputMode="decimal"
          autocomplete="off"
          hint="Up to 6 decimals, like 250 or 12.5."
          error={errors.amount}
          value={amountText}
          onInput={(event) => setAmountText(event.currentTarget.value)}
        />
        <TextAreaField label="Reason" rows={2} hint="Kept with the top-up in the audit trail." error={errors.note} value={note} onInput={(event) => setNote(event.currentTarget.value)} />
        <div class="form-actions">
          <Button type="submit" variant="primary">
            Add credit
          </Button>
        </div>
      </form>
      <Dialog
        open={confirming !== null}
        title="Add credit?"
        onClose={() => setConfirming(null)}
        actions={
          <>
            <Button onClick={() => setConfirming(null)}>Cancel</Button>
            <Button variant="primary" busy={sending} onClick={send}>
              Confirm top-up
            </Button>
          </>
        }
      >
        {confirming && (
          <p>
            Add <strong>{formatEgp(confirming.amount.decimal, { exact: true })}</strong> to <strong dir="auto">{organization.name}</strong>, because “<span dir="auto">{confirming.note}</span>”?
          </p>
        )}
      </Dialog>
    </Section>
  )
}
