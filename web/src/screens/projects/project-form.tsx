import { api } from '../../lib/api'
import { plainEgp } from '../../lib/format'
import type { Project } from '../../lib/sdk'
import { billingTimeZone } from '../../lib/session'
import { useResource } from '../../lib/use-resource'
import { egpAmountProblem, orNull, rpmProblem, rpmValue } from '../../lib/validate'
import { CheckboxField, ErrorAlert, Skeleton, TextField, type FormErrors, type FormState } from '../../ui'

/** A project's editable settings as form values. */
export type ProjectValues = {
  name: string
  monthly_spend_cap_egp: string
  rpm_override: string
  all_models: boolean
  enabled_models: string[]
}

export function projectValues(project?: Project): ProjectValues {
  return {
    name: project?.name ?? '',
    monthly_spend_cap_egp: plainEgp(project?.monthly_spend_cap_egp),
    rpm_override: project?.rpm_override?.toString() ?? '',
    all_models: (project?.enabled_models ?? null) === null,
    enabled_models: project?.enabled_models ?? [],
  }
}

export function validateProject(values: ProjectValues): FormErrors<ProjectValues> {
  return {
    name: values.name.trim() === '' ? 'Give the project a name.' : values.name.trim().length > 200 ? 'Use at most 200 characters.' : undefined,
    monthly_spend_cap_egp: egpAmountProblem(values.monthly_spend_cap_egp),
    rpm_override: rpmProblem(values.rpm_override),
    enabled_models: !values.all_models && values.enabled_models.length === 0 ? 'Pick at least one model, or allow every model.' : undefined,
  }
}

/** The request body of a create or an update. */
export function projectBody(values: ProjectValues) {
  return {
    name: values.name.trim(),
    monthly_spend_cap_egp: orNull(values.monthly_spend_cap_egp),
    rpm_override: rpmValue(values.rpm_override),
    enabled_models: values.all_models ? null : values.enabled_models,
  }
}

/** The fields of a project's settings. */
export function ProjectFields({ form, withModels = true }: { form: FormState<ProjectValues>; withModels?: boolean }) {
  const zone = billingTimeZone.value
  return (
    <>
      <TextField label="Project name" required {...form.text('name')} error={form.errors.name} />
      <div class="form-grid">
        <TextField
          label="Monthly spend cap (EGP)"
          optional
          inputMode="decimal"
          hint={`All the project's keys together; resets on the 1st, ${zone}. Empty for no cap.`}
          {...form.text('monthly_spend_cap_egp')}
          error={form.errors.monthly_spend_cap_egp}
        />
        <TextField
          label="RPM override"
          optional
          inputMode="numeric"
          hint="Requests per minute for each key of the project, within the plan's ceiling. Empty for the plan's."
          {...form.text('rpm_override')}
          error={form.errors.rpm_override}
        />
      </div>
      {withModels && (
        <fieldset>
          <legend>Enabled models</legend>
          <CheckboxField label="Every model of the organization's plan" checked={form.values.all_models} onChange={(on) => form.set('all_models', on)} />
          {!form.values.all_models && <ModelChoices form={form} />}
        </fieldset>
      )}
    </>
  )
}

/** A checkbox per model of the organization's catalog (and per model the project enables already). */
function ModelChoices({ form }: { form: FormState<ProjectValues> }) {
  const catalog = useResource((signal) => api().organization.models.list({ signal }), [])
  const chosen = form.values.enabled_models
  const ids = [...new Set([...(catalog.data?.data ?? []).filter((model) => model.status === 'Live').map((model) => model.id), ...chosen])]
  const toggle = (id: string, on: boolean) => form.set('enabled_models', on ? [...chosen, id] : chosen.filter((each) => each !== id))
  return (
    <div class="model-choices">
      <p class="field-hint">Only these models answer the project's keys; see the <a href="/models">Models</a> page for prices.</p>
      <ErrorAlert problem={catalog.problem} onRetry={catalog.reload} />
      {catalog.loading && catalog.data === undefined && <Skeleton lines={3} label="Loading the models…" />}
      {ids.map((id) => (
        <CheckboxField
          key={id}
          label={<span class="mono">{id}</span>}
          hint={catalog.data?.data.find((model) => model.id === id)?.modality}
          checked={chosen.includes(id)}
          onChange={(on) => toggle(id, on)}
        />
      ))}
      {form.errors.enabled_models && <p class="field-error">{form.errors.enabled_models}</p>}
    </div>
  )
}
