import { useMemo, useState } from 'preact/hooks'
import { useLocation } from 'preact-iso'
import { api, clientFor } from '../../lib/api'
import { formatEgp } from '../../lib/format'
import { can, currentMembership, me } from '../../lib/session'
import type { ModelObject, Project } from '../../lib/sdk'
import { useResource } from '../../lib/use-resource'
import { Button, EmptyState, ErrorAlert, LinkButton, PageHeader, Section, SelectField, Skeleton, TextAreaField, TextField } from '../../ui'
import { listOrganizationModels } from '../models/catalog'
import { AnswerPanel } from './answer-panel'
import { CodeTabs } from './code-tabs'
import { MessagesEditor } from './messages-editor'
import { buildRequest, type DraftMessage, type DraftSettings, type SettingProblem } from './request-code'
import { useChatStream } from './use-chat-stream'

const numberFields = [
  { name: 'temperature', label: 'Temperature', hint: '0 to 2; higher is more varied.', inputMode: 'decimal' },
  { name: 'top_p', label: 'Top P', hint: '0 to 1.', inputMode: 'decimal' },
  { name: 'max_tokens', label: 'Max tokens', hint: 'The longest answer, in tokens.', inputMode: 'numeric' },
  { name: 'presence_penalty', label: 'Presence penalty', hint: '−2 to 2.', inputMode: 'decimal' },
  { name: 'frequency_penalty', label: 'Frequency penalty', hint: '−2 to 2.', inputMode: 'decimal' },
  { name: 'seed', label: 'Seed', hint: 'The same seed repeats an answer where the model can.', inputMode: 'numeric' },
] as const

type FieldName = SettingProblem['param'] | 'project'

/** The field a problem of the server belongs to, from its `param`. */
function fieldOfParam(param: string | null): FieldName | null {
  if (param === null) return null
  if (param === 'OpenAI-Project') return 'project'
  if (param.startsWith('messages')) return 'messages'
  const head = param.split(/[.[]/)[0]!
  return ['model', 'temperature', 'top_p', 'max_tokens', 'stop', 'presence_penalty', 'frequency_penalty', 'seed'].includes(head) ? (head as FieldName) : null
}

/** The playground: try a chat model with the signed-in session, billed to a project, and take the request away as code. */
export function PlaygroundPage() {
  const { query } = useLocation()
  const organizationId = currentMembership.value?.id ?? null
  const mayUse = can('api_keys.manage')
  const catalog = useResource((signal) => listOrganizationModels(api(), { signal }), [organizationId])
  const projects = useResource(async (signal) => (await api().organization.projects.page({ limit: 100 }, { signal })).data.filter((project) => project.status === 'active'), [organizationId])
  const [projectId, setProjectId] = useState('')
  const [settings, setSettings] = useState<DraftSettings>({ model: query.model ?? '', temperature: '', top_p: '', max_tokens: '', stop: '', presence_penalty: '', frequency_penalty: '', seed: '' })
  const [messages, setMessages] = useState<DraftMessage[]>([
    { role: 'system', content: '' },
    { role: 'user', content: '' },
  ])
  const [errors, setErrors] = useState<Partial<Record<FieldName, string>>>({})
  const { answer, send, stop } = useChatStream()

  const project: Project | undefined = projects.data?.find((candidate) => candidate.id === projectId) ?? projects.data?.[0]
  const models = useMemo(
    () => (catalog.data ?? []).filter((model) => model.modality === 'Chat' && model.status === 'Live' && (project?.enabled_models == null || project.enabled_models.includes(model.id))),
    [catalog.data, project],
  )
  const modelId = models.some((model) => model.id === settings.model) ? settings.model : (models[0]?.id ?? '')
  const model: ModelObject | undefined = models.find((candidate) => candidate.id === modelId)
  const built = buildRequest({ ...settings, model: modelId }, messages)
  const streaming = answer.state === 'streaming'
  const unverified = me.value?.email_verified === false

  const set = (name: keyof DraftSettings, value: string) => {
    setSettings((current) => ({ ...current, [name]: value }))
    setErrors((current) => ({ ...current, [name]: undefined }))
  }

  const submit = async (event: Event) => {
    event.preventDefault()
    if (streaming || !project) return
    if ('problems' in built) {
      setErrors(Object.fromEntries(built.problems.map((problem) => [problem.param, problem.message])))
      return
    }
    setErrors({})
    await send(clientFor({ organization: organizationId, project: project.id }), built.request)
  }

  // The server's complaint about one field is shown at that field too.
  const serverField = fieldOfParam(answer.problem?.param ?? null)
  const errorOf = (name: FieldName) => errors[name] ?? (serverField === name ? answer.problem!.message : undefined)

  if (!mayUse) {
    return (
      <>
        <PageHeader title="Playground" />
        <EmptyState title="Your role cannot use the playground.">Requests from the playground are billed to a project; ask an owner or admin for the member role.</EmptyState>
      </>
    )
  }
  if (projects.data === undefined || catalog.data === undefined) {
    const problem = projects.problem ?? catalog.problem
    return (
      <>
        <PageHeader title="Playground" />
        {problem ? <ErrorAlert problem={problem} onRetry={projects.problem ? projects.reload : catalog.reload} /> : <Skeleton lines={6} />}
      </>
    )
  }
  if (project === undefined) {
    return (
      <>
        <PageHeader title="Playground" />
        <EmptyState title="No active project." action={can('projects.manage') && <LinkButton href="/projects">Create a project</LinkButton>}>
          The playground bills its requests to a project of the organization.
        </EmptyState>
      </>
    )
  }

  return (
    <>
      <PageHeader title="Playground" description="Try a chat model. Requests are billed to the project you pick, like its API keys’ requests." />
      {unverified && (
        <p class="alert alert-warning" role="alert">
          Verify your e-mail address to send requests from the playground: open the link in the verification mail.
        </p>
      )}
      <form class="playground" aria-label="Playground request" noValidate onSubmit={submit} onKeyDown={(event) => event.key === 'Enter' && (event.ctrlKey || event.metaKey) && void submit(event)}>
        <div class="playground-conversation">
          <MessagesEditor messages={messages} error={errorOf('messages')} onChange={(next) => (setMessages(next), setErrors((current) => ({ ...current, messages: undefined })))} />
          <div class="form-actions">
            {/* Keyed apart: reusing one element, a click on Stop would land on Send once the answer stops, and submit again. */}
            {streaming ? (
              <Button key="stop" variant="danger" onClick={stop}>
                Stop
              </Button>
            ) : (
              <Button key="send" type="submit" variant="primary" disabled={unverified}>
                Send
              </Button>
            )}
            <span class="muted small">Ctrl+Enter sends.</span>
          </div>
          <AnswerPanel answer={answer} model={model} onContinue={() => setMessages([...messages.filter((message) => message.content.trim() !== ''), { role: 'assistant', content: answer.text }, { role: 'user', content: '' }])} />
        </div>
        <div class="playground-target">
          <SelectField label="Project" hint="Billed for the requests." error={errorOf('project')} value={project.id} onChange={(event) => setProjectId(event.currentTarget.value)}>
            {projects.data.map((candidate) => (
              <option key={candidate.id} value={candidate.id}>
                {candidate.name}
              </option>
            ))}
          </SelectField>
          <SelectField label="Model" error={errorOf('model')} hint={model && `${formatEgp(model.input_price_egp_per_1m)} in, ${formatEgp(model.output_price_egp_per_1m)} out per 1M tokens; ${model.context_window_label} context.`} value={modelId} onChange={(event) => set('model', event.currentTarget.value)}>
            {models.length === 0 && <option value="">No chat model is available to this project</option>}
            {models.map((candidate) => (
              <option key={candidate.id} value={candidate.id}>
                {candidate.id}
                {candidate.shutdown_date ? ` (retires ${candidate.shutdown_date})` : ''}
              </option>
            ))}
          </SelectField>
        </div>
        <fieldset class="playground-parameters">
          <legend>Parameters</legend>
          {numberFields.map((field) => (
            <TextField key={field.name} label={field.label} optional inputMode={field.inputMode} autocomplete="off" hint={field.hint} error={errorOf(field.name)} value={settings[field.name]} onInput={(event) => set(field.name, event.currentTarget.value)} />
          ))}
          <TextAreaField label="Stop sequences" optional rows={2} hint="Up to 4, one a line." error={errorOf('stop')} value={settings.stop} onInput={(event) => set('stop', event.currentTarget.value)} />
        </fieldset>
      </form>
      <Section title="Copy the request as code">
        <CodeTabs request={'request' in built ? built.request : null} />
      </Section>
    </>
  )
}
