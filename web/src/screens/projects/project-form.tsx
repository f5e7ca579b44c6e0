import { plainEgp } from '../../lib/format'
import type { Project } from '../../lib/sdk'
import { billingTimeZone } from '../../lib/session'
import { egpAmountProblem, listEntries, orNull, rpmProblem, rpmValue } from '../../lib/validate'
import { CheckboxField, TextAreaField, TextField, type FormErrors, type FormState } from '../../ui'

/** A project's editable settings as form values. */
export type ProjectValues = {
  name: string
  monthly_spend_cap_egp: string
  rpm_override: string
  all_models: boolean
  enabled_models: string
}

export function projectValues(project?: Project): ProjectValues {
  return {
    name: project?.name ?? '',
    monthly_spend_cap_egp: plainEgp(project?.monthly_spend_cap_egp),
    rpm_override: project?.rpm_override?.toString() ?? '',
    all_models: (project?.enabled_models ?? null) === null,
    enabled_models: project?.enabled_models?.join('\n') ?? '',
  }
}

export function validateProject(values: ProjectValues): FormErrors<ProjectValues> {
  return {
    name: values.name.trim() === '' ? 'Give the project a name.' : values.name.trim().length > 200 ? 'Use at most 200 characters.' : undefined,
    monthly_spend_cap_egp: egpAmountProblem(values.monthly_spend_cap_egp),
    rpm_override: rpmProblem(values.rpm_override),
    enabled_models: !values.all_models && listEntries(values.enabled_models).length === 0 ? 'List at least one model, or allow every model.' : undefined,
  }
}

/** The request body of a create or an update. */
export function projectBody(values: ProjectValues) {
  return {
    name: values.name.trim(),
    monthly_spend_cap_egp: orNull(values.monthly_spend_cap_egp),
    rpm_override: rpmValue(values.rpm_override),
    enabled_models: values.all_models ? null : listEntries(values.enabled_models),
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
          {!form.values.all_models && (
            <TextAreaField
              label="Only these models"
              rows={4}
              hint={
                <>
                  Model ids, one per line, as the <a href="/models">Models</a> page lists them (like nile/llama-3.3-70b-instruct).
                </>
              }
              {...form.text('enabled_models')}
              error={form.errors.enabled_models}
            />
          )}
        </fieldset>
      )}
    </>
  )
}
