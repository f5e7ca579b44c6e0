import { useState } from 'preact/hooks'
import { api } from '../../lib/api'
import { formatCount, formatDateTime, formatEgp } from '../../lib/format'
import type { Project } from '../../lib/sdk'
import { billingTimeZone, can } from '../../lib/session'
import { cursorPage, usePagedList } from '../../lib/use-resource'
import { Badge, Button, CheckboxField, Dialog, EmptyState, Form, PageHeader, PagedTable, statusTone, useForm, type Column } from '../../ui'
import { ProjectFields, projectBody, projectValues, validateProject } from './project-form'

/** /projects: the organization's projects, archived ones on request; new ones for admins and owners. */
export function ProjectsPage() {
  const [showArchived, setShowArchived] = useState(false)
  const [creating, setCreating] = useState(false)
  const projects = usePagedList((cursor) => api().organization.projects.page({ after: cursor, limit: 50, include_archived: showArchived }).then(cursorPage), [showArchived])
  const manage = can('projects.manage')
  const zone = billingTimeZone.value

  const columns: Column<Project>[] = [
    {
      header: 'Name',
      cell: (project) => (
        <a href={`/projects/${encodeURIComponent(project.id)}`}>
          <bdi>{project.name}</bdi>
        </a>
      ),
    },
    { header: 'Status', cell: (project) => <Badge tone={statusTone(project.status)}>{project.status}</Badge> },
    { header: 'Monthly spend cap', numeric: true, cell: (project) => (project.monthly_spend_cap_egp === null ? 'None' : formatEgp(project.monthly_spend_cap_egp)) },
    { header: 'RPM override', numeric: true, cell: (project) => (project.rpm_override === null ? 'Plan default' : formatCount(project.rpm_override)) },
    { header: 'Models', cell: (project) => (project.enabled_models === null ? 'All' : `${project.enabled_models.length} enabled`) },
    { header: 'Created', cell: (project) => formatDateTime(project.created_at, zone) },
  ]

  return (
    <div>
      <PageHeader
        title="Projects"
        description="Each project has its own keys, spend cap, rate limit and models."
        actions={
          manage && (
            <Button variant="primary" onClick={() => setCreating(true)}>
              New project
            </Button>
          )
        }
      />
      <div class="filters">
        <CheckboxField label="Show archived projects" checked={showArchived} onChange={setShowArchived} />
      </div>
      <PagedTable
        caption="Projects"
        hideCaption
        list={projects}
        columns={columns}
        rowKey={(project) => project.id}
        empty={
          <EmptyState title="No projects yet." action={manage && <Button onClick={() => setCreating(true)}>Create a project</Button>}>
            {manage ? 'A project holds API keys and their limits.' : 'Admins and owners create projects.'}
          </EmptyState>
        }
      />
      {creating && (
        <NewProjectDialog
          onClose={() => setCreating(false)}
          onCreated={(project) => {
            setCreating(false)
            projects.update((items) => [project, ...items])
          }}
        />
      )}
    </div>
  )
}

function NewProjectDialog({ onClose, onCreated }: { onClose: () => void; onCreated: (project: Project) => void }) {
  const form = useForm({
    initial: projectValues(),
    validate: validateProject,
    submit: async (values) => onCreated(await api().organization.projects.create(projectBody(values))),
  })
  return (
    <Dialog open title="New project" onClose={onClose}>
      <Form state={form} label="New project">
        <ProjectFields form={form} withModels={false} />
        <p class="muted small">Every model of the plan is enabled; narrow them in the project's settings.</p>
        <div class="form-actions">
          <Button type="submit" variant="primary" busy={form.submitting}>
            Create project
          </Button>
          <Button onClick={onClose}>Cancel</Button>
        </div>
      </Form>
    </Dialog>
  )
}
