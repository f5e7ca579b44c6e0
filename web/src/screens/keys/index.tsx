import { api } from '../../lib/api'
import type { Project } from '../../lib/sdk'
import { useResource } from '../../lib/use-resource'
import { EmptyState, ErrorAlert, LinkButton, PageHeader, Section, Skeleton } from '../../ui'
import { ProjectKeys } from './project-keys'

/** Every active project of the organization (all pages of them). */
async function allProjects(signal: AbortSignal): Promise<Project[]> {
  const projects: Project[] = []
  for (let after: string | undefined; ; ) {
    const page = await api().organization.projects.page({ after, limit: 100 }, { signal })
    projects.push(...page.data)
    if (!page.has_more || page.last_id === null) return projects
    after = page.last_id
  }
}

/** /keys: the API keys of every project, project by project. */
export function KeysPage() {
  const projects = useResource(allProjects, [])
  const balance = useResource((signal) => api().organization.balance.retrieve({ signal }), [])

  return (
    <div>
      <PageHeader title="API keys" description="Every key of every active project, with its limits, this month's spend and last use." />
      <ErrorAlert problem={projects.problem} onRetry={projects.reload} />
      {projects.loading && projects.data === undefined && <Skeleton lines={5} />}
      {projects.data?.length === 0 && <EmptyState title="No projects yet." action={<LinkButton href="/projects">Go to projects</LinkButton>} />}
      {projects.data?.map((project) => (
        <Section
          key={project.id}
          title={project.name}
          actions={
            <a href={`/projects/${encodeURIComponent(project.id)}`}>
              Project settings<span class="visually-hidden"> of {project.name}</span>
            </a>
          }
        >
          <ProjectKeys projectId={project.id} projectName={project.name} archived={project.status === 'archived'} spend={balance.data?.api_keys} />
        </Section>
      ))}
    </div>
  )
}
