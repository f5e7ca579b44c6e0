import { api } from '../../lib/api'
import { formatDateTime, plainEgp, startOfDayIn } from '../../lib/format'
import type { ApiKey, ApiKeyCreateParams, ApiKeyUpdateParams, ApiKeyWithSecret } from '../../lib/sdk'
import { billingTimeZone } from '../../lib/session'
import { allowListProblem, egpAmountProblem, listEntries, orNull, rpmProblem, rpmValue } from '../../lib/validate'
import { Button, CheckboxField, Dialog, Form, SelectField, TextAreaField, TextField, useForm } from '../../ui'

/** The scopes a key can have, and what each lets it call. */
export const keyScopes = [
  { id: 'chat.completions', label: 'Chat completions', hint: 'POST /v1/chat/completions' },
  { id: 'embeddings', label: 'Embeddings', hint: 'POST /v1/embeddings' },
  { id: 'models.read', label: 'Read models', hint: 'GET /v1/models' },
] as const

type Scope = (typeof keyScopes)[number]['id']

const expiryChoices = [
  { value: 'keep', label: 'Keep the current expiry' },
  { value: 'never', label: 'Never' },
  { value: '7', label: 'In 7 days' },
  { value: '30', label: 'In 30 days' },
  { value: '90', label: 'In 90 days' },
  { value: '365', label: 'In 1 year' },
  { value: 'date', label: 'On a date…' },
]

interface KeyFormProps {
  projectId: string
  /** The key to edit; a new key when absent. */
  apiKey?: ApiKey
  open: boolean
  onClose: () => void
  onCreated?: (key: ApiKeyWithSecret) => void
  onSaved?: (key: ApiKey) => void
}

/** Creates a key with every option, or edits one: name, expiry, RPM limit, monthly cap, IP allow-list, scopes. */
export function KeyFormDialog({ projectId, apiKey, open, onClose, onCreated, onSaved }: KeyFormProps) {
  const zone = billingTimeZone.value
  const editing = apiKey !== undefined
  const form = useForm({
    initial: {
      name: apiKey?.name ?? '',
      expiry: editing ? 'keep' : 'never',
      expiry_date: '',
      rpm_limit: apiKey?.rpm_limit?.toString() ?? '',
      monthly_spend_cap_egp: plainEgp(apiKey?.monthly_spend_cap_egp),
      ip_allow_list: apiKey?.ip_allow_list.join('\n') ?? '',
      scopes: (apiKey?.scopes ?? keyScopes.map((scope) => scope.id)) as string[],
    },
    validate: (values) => ({
      name: values.name.trim() === '' ? 'Give the key a name.' : values.name.trim().length > 200 ? 'Use at most 200 characters.' : undefined,
      expiry_date:
        values.expiry !== 'date' ? undefined : values.expiry_date === '' ? 'Pick the day the key stops working.' : startOfDayIn(values.expiry_date, zone) * 1000 <= Date.now() ? 'Pick a day in the future.' : undefined,
      rpm_limit: rpmProblem(values.rpm_limit),
      monthly_spend_cap_egp: egpAmountProblem(values.monthly_spend_cap_egp),
      ip_allow_list: allowListProblem(values.ip_allow_list),
      scopes: values.scopes.length === 0 ? 'Pick at least one scope.' : undefined,
    }),
    fieldOf: (param) => (param === 'expires_at' || param === 'expires_in_days' ? 'expiry' : null),
    submit: async (values) => {
      const expiry =
        values.expiry === 'keep'
          ? {}
          : values.expiry === 'never'
            ? { expires_at: null }
            : values.expiry === 'date'
              ? { expires_at: startOfDayIn(values.expiry_date, zone) }
              : { expires_in_days: Number(values.expiry) }
      const fields = {
        name: values.name.trim(),
        ...expiry,
        rpm_limit: rpmValue(values.rpm_limit),
        monthly_spend_cap_egp: orNull(values.monthly_spend_cap_egp),
        ip_allow_list: listEntries(values.ip_allow_list),
        scopes: values.scopes as Scope[],
      }
      const keys = api().organization.projects.apiKeys(projectId)
      if (editing) onSaved?.(await keys.update(apiKey.id, fields as ApiKeyUpdateParams))
      else onCreated?.(await keys.create(fields as ApiKeyCreateParams))
    },
  })

  const toggleScope = (scope: string, on: boolean) =>
    form.set(
      'scopes',
      on ? keyScopes.map((each) => each.id).filter((id) => id === scope || form.values.scopes.includes(id)) : form.values.scopes.filter((id) => id !== scope),
    )

  const close = () => {
    form.reset()
    onClose()
  }

  return (
    <Dialog open={open} title={editing ? `Edit key ${apiKey.name}` : 'Create an API key'} onClose={close}>
      <Form state={form} label={editing ? 'Edit API key' : 'Create API key'}>
        <TextField label="Name" required {...form.text('name')} error={form.errors.name} hint="Say what uses the key, like “support bot, production”." />
        <SelectField
          label="Expiry"
          value={form.values.expiry}
          onChange={(event) => form.set('expiry', event.currentTarget.value)}
          error={form.errors.expiry}
          hint={editing ? `Now: ${apiKey.expires_at === null ? 'never expires' : formatDateTime(apiKey.expires_at, zone)}.` : undefined}
        >
          {expiryChoices
            .filter((choice) => editing || choice.value !== 'keep')
            .map((choice) => (
              <option key={choice.value} value={choice.value}>
                {choice.label}
              </option>
            ))}
        </SelectField>
        {form.values.expiry === 'date' && (
          <TextField label="Expiry date" type="date" required hint={`The key stops working at the start of this day, ${zone}.`} {...form.text('expiry_date')} error={form.errors.expiry_date} />
        )}
        <div class="form-grid">
          <TextField
            label="RPM limit"
            optional
            inputMode="numeric"
            hint="Requests per minute; empty for the project's or plan's limit."
            {...form.text('rpm_limit')}
            error={form.errors.rpm_limit}
          />
          <TextField
            label="Monthly spend cap (EGP)"
            optional
            inputMode="decimal"
            hint={`Resets on the 1st, ${zone}; empty for no cap.`}
            {...form.text('monthly_spend_cap_egp')}
            error={form.errors.monthly_spend_cap_egp}
          />
        </div>
        <TextAreaField
          label="IP allow-list"
          optional
          rows={3}
          hint="IPv4 or IPv6 addresses or CIDRs, one per line (203.0.113.0/24, 2001:db8::/32); empty for any address."
          {...form.text('ip_allow_list')}
          error={form.errors.ip_allow_list}
        />
        <fieldset aria-describedby={form.errors.scopes ? 'key-scopes-error' : undefined}>
          <legend>Scopes</legend>
          {keyScopes.map((scope) => (
            <CheckboxField key={scope.id} label={scope.label} hint={scope.hint} checked={form.values.scopes.includes(scope.id)} onChange={(on) => toggleScope(scope.id, on)} />
          ))}
          {form.errors.scopes && (
            <p id="key-scopes-error" class="field-error">
              {form.errors.scopes}
            </p>
          )}
        </fieldset>
        <div class="form-actions">
          <Button type="submit" variant="primary" busy={form.submitting}>
            {editing ? 'Save key' : 'Create key'}
          </Button>
          <Button onClick={close}>Cancel</Button>
        </div>
      </Form>
    </Dialog>
  )
}
