import { useId } from 'preact/hooks'
import { accountApi } from '../../lib/api'
import type { AdminOrganization } from '../../lib/sdk'
import { Button, CheckboxField, ErrorAlert, Form, Section, SelectField, Skeleton, TextField, useForm } from '../../ui'
import { useCatalogChoices } from './catalog-choices'
import { maxRpm, planTiers, settingsChanges, valuesOf, type SettingsValues } from './settings-changes'

function validate(values: SettingsValues) {
  const errors: Partial<Record<keyof SettingsValues, string>> = {}
  const rpm = values.rpm.trim()
  if (rpm !== '' && (!/^\d+$/.test(rpm) || Number(rpm) < 1 || Number(rpm) > maxRpm)) errors.rpm = `Enter a whole number from 1 to ${maxRpm}, or leave it empty for the plan's limit.`
  if (values.allow === 'list' && values.allowed.length === 0) errors.allowed = 'Choose at least one model, or allow every model of the plan.'
  return errors
}

/** The server's `param` as the field that shows it. */
function fieldOf(param: string): keyof SettingsValues | null {
  if (param === 'custom_rpm_ceiling') return 'rpm'
  if (param.startsWith('allowed_models')) return 'allowed'
  if (param === 'requires_region') return 'region'
  return null
}

/** Plan tier, RPM ceiling, model allow-list and data residency of one organization. */
export function OrganizationSettings({ organization, onSaved }: { organization: AdminOrganization; onSaved: (next: AdminOrganization | null) => void }) {
  const choices = useCatalogChoices()
  const form = useForm<SettingsValues>({
    initial: valuesOf(organization),
    validate,
    fieldOf,
    submit: async (values) => {
      const changes = settingsChanges(organization, values)
      if (Object.keys(changes).length === 0) return onSaved(null)
      const next = await accountApi().admin.organizations.update(organization.id, changes)
      form.reset(valuesOf(next))
      onSaved(next)
    },
  })
  const allowedId = useId()
  const modelIds = [...new Set([...(choices.data?.modelIds ?? []), ...form.values.allowed])].sort()
  const regions = [...new Set([...(choices.data?.regions ?? []), ...(organization.requires_region ? [organization.requires_region] : [])])].sort()
  const toggle = (modelId: string, on: boolean) => form.set('allowed', on ? [...form.values.allowed, modelId] : form.values.allowed.filter((id) => id !== modelId))

  return (
    <Section title="Plan and limits">
      <Form state={form} label="Plan and limits" class="form narrow-form">
        <SelectField label="Plan tier" hint="Sets the default RPM limit and the models the plan offers." error={form.errors.plan_tier} value={form.values.plan_tier} onChange={(event) => form.set('plan_tier', event.currentTarget.value)}>
          {planTiers.map((tier) => (
            <option key={tier} value={tier}>
              {tier}
            </option>
          ))}
        </SelectField>
        <TextField label="RPM ceiling" optional inputMode="numeric" hint="Requests per minute per key at most, above the plan's default. Empty: the plan's." error={form.errors.rpm} {...form.text('rpm')} />
        <fieldset class="fieldset" aria-describedby={form.errors.allowed ? `${allowedId}-error` : undefined}>
          <legend>Models</legend>
          <div class="radio-field">
            <input type="radio" id={`${allowedId}-plan`} name="allow" value="plan" checked={form.values.allow === 'plan'} onChange={() => form.set('allow', 'plan')} />
            <label for={`${allowedId}-plan`}>Every model of the plan</label>
          </div>
          <div class="radio-field">
            <input type="radio" id={`${allowedId}-list`} name="allow" value="list" checked={form.values.allow === 'list'} onChange={() => form.set('allow', 'list')} />
            <label for={`${allowedId}-list`}>Only the models chosen below</label>
          </div>
          {form.values.allow === 'list' &&
            (choices.loading && modelIds.length === 0 ? (
              <Skeleton lines={3} label="Loading the models…" />
            ) : (
              <div class="checkbox-list" aria-invalid={form.errors.allowed ? true : undefined}>
                {modelIds.map((modelId) => (
                  <CheckboxField key={modelId} label={<code>{modelId}</code>} checked={form.values.allowed.includes(modelId)} onChange={(on) => toggle(modelId, on)} />
                ))}
              </div>
            ))}
          {form.errors.allowed && (
            <p id={`${allowedId}-error`} class="field-error">
              {form.errors.allowed}
            </p>
          )}
        </fieldset>
        <SelectField
          label="Data residency"
          hint="When set, only deployments in this region serve the organization."
          error={form.errors.region}
          value={form.values.region}
          onChange={(event) => form.set('region', event.currentTarget.value)}
        >
          <option value="">No requirement</option>
          {regions.map((region) => (
            <option key={region} value={region}>
              {region}
            </option>
          ))}
        </SelectField>
        <ErrorAlert problem={choices.problem} onRetry={choices.reload} />
        <div class="form-actions">
          <Button type="submit" variant="primary" busy={form.submitting}>
            Save settings
          </Button>
        </div>
      </Form>
    </Section>
  )
}
