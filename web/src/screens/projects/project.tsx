import { useState } from 'preact/hooks'
import { api } from '../../lib/api'
import { formatCount, formatDateTime, formatEgp } from '../../lib/format'
import type { Project } from '../../lib/sdk'
import { billingTimeZone, can } from '../../lib/session'
import { useResource } from '../../lib/use-resource'
import { Badge, Button, ConfirmDialog, ErrorAlert, Form, PageHeader, Section, Skeleton, SuccessAlert, statusTone, useForm } from '../../ui'
import { ProjectKeys } from '../keys/project-keys'
import { ProjectFields, projectBody, projectValues, validateProject } from './project-form'

/** /projects/:id: a project's settings, its month's spend, and its API keys. */
export function ProjectPage({ id }: { id: string }) {
  const project = useResource((signal) => api().organization.projects.retrieve(id, { signal }), [id])
  const balance = useResource((signal) => api().organization.balance.retrieve({ signal }), [])
  const [archiving, setArchiving] = useState(false)

  if (project.data === undefined) {
    return (
      <div>
        {project.problem ? (
          <>
            <h1>Project</h1>
            <ErrorAlert problem={project.problem} onRetry={project.reload} />
            <a href="/projects">Back to projects</a>
          </>
        ) : (
          <Skeleton lines={6} label="Loading the project…" />
        )}
      </div>
    )
  }
  const current = project.data
  const archived = current.status === 'archived'
  const manage = can('projects.manage') && !archived
  const spend = balance.data?.projects.find((line) => line.id === current.id)

  return (
    <div>
      <PageHeader
        title={current.name}
        description={
          <>
            <Badge tone={statusTone(current.status)}>{current.status}</Badge> <a href="/projects">All projects</a>
          </>
        }
        actions={
          manage && (
            <Button variant="danger" onClick={() => setArchiving(true)}>
              Archive project
            </Button>
          )
        }
      />
      <div class="cards">
        <div class="card">
          <p class="card-label">Spend this month</p>
          <p class="card-value">{spend ? formatEgp(spend.month_to_date_spend_egp) : balance.loading ? '…' : formatEgp('0')}</p>
          {current.monthly_spend_cap_egp !== null && <p class="muted small">of a {formatEgp(current.monthly_spend_cap_egp)} cap</p>}
        </div>
      </div>
      <Section title="Settings">
        {manage ? (
          <ProjectSettingsForm project={current} onSaved={(saved) => project.setData(() => saved)} />
        ) : (
          <ProjectDetails project={current} />
        )}
      </Section>
      <Section title="API keys">
        <ProjectKeys projectId={current.id} projectName={current.name} archived={archived} spend={balance.data?.api_keys} />
      </Section>
      <ConfirmDialog
        open={archiving}
        title="Archive this project?"
        confirmLabel="Archive project"
        danger
        onClose={() => setArchiving(false)}
        onConfirm={async () => {
          const saved = await api().organization.projects.archive(current.id)
          project.setData(() => saved)
        }}
      >
        <p>
          Its API keys stop working at once. The project stays listed under “Show archived projects”, with its usage.
        </p>
      </ConfirmDialog>
    </div>
  )
}

function ProjectDetails({ project }: { project: Project }) {
  const zone = billingTimeZone.value
  return (
    <dl class="details">
      <dt>Monthly spend cap</dt>
      <dd>{project.monthly_spend_cap_egp === null ? 'None' : formatEgp(project.monthly_spend_cap_egp)}</dd>
      <dt>RPM override</dt>
      <dd>{project.rpm_override === null ? "The plan's" : formatCount(project.rpm_override)}</dd>
      <dt>Enabled models</dt>
      <dd>{project.enabled_models === null ? 'Every model of the plan' : project.enabled_models.join(', ')}</dd>
      <dt>Created</dt>
      <dd>{formatDateTime(project.created_at, zone)}</dd>
      {project.archived_at !== null && (
        <>
          <dt>Archived</dt>
          <dd>{formatDateTime(project.archived_at, zone)}</dd>
        </>
      )}
    </dl>
  )
}

function ProjectSettingsForm({ project, onSaved }: { project: Project; onSaved: (project: Project) => void }) {
  const [saved, setSaved] = useState(false)
  const form = useForm({
    initial: projectValues(project),
    validate: validateProject,
    submit: async (values) => {
      setSaved(false)
      onSaved(await api().organization.projects.update(project.id, projectBody(values)))
      setSaved(true)
    },
  })
  return (
    <Form state={form} label="Project settings">
      {saved && <SuccessAlert>Settings saved.</SuccessAlert>}
      <ProjectFields form={form} />
      <div class="form-actions">
        <Button type="submit" variant="primary" busy={form.submitting}>
          Save settings
        </Button>
      </div>
    </Form>
  )
}
