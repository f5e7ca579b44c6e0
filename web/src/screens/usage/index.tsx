import { useState } from 'preact/hooks'
import { api } from '../../lib/api'
import { dateInZone, describeTimeZone, formatBucket, formatCount, formatEgp, nextDate, startOfDayIn } from '../../lib/format'
import type { UsageBucket, UsageParams } from '../../lib/sdk'
import { billingTimeZone } from '../../lib/session'
import { usePagedList, useResource } from '../../lib/use-resource'
import { Button, CheckboxField, Form, PageHeader, PagedTable, SelectField, TextField, useForm, type Column } from '../../ui'
import { groupLabel, namesFrom, type GroupField } from './usage-series'

interface Filters {
  from: string
  to: string
  width: '1d' | '1h'
  groupBy: GroupField[]
  projectId: string
  apiKeyId: string
  model: string
  endpoint: '' | 'completions' | 'embeddings'
}

interface Row {
  bucket: UsageBucket
  result: UsageBucket['results'][number]
}

const groupFields: { id: GroupField; label: string }[] = [
  { id: 'model', label: 'Model' },
  { id: 'project_id', label: 'Project' },
  { id: 'api_key_id', label: 'API key' },
]

/** /usage: usage and cost per day or hour, filtered and grouped, a page of periods at a time. */
export function UsagePage() {
  const zone = billingTimeZone.value
  const balance = useResource((signal) => api().organization.balance.retrieve({ signal }), [])
  const [filters, setFilters] = useState<Filters>(() => ({
    from: dateInZone(zone, 6),
    to: dateInZone(zone),
    width: '1d',
    groupBy: ['model'],
    projectId: '',
    apiKeyId: '',
    model: '',
    endpoint: '',
  }))
  const names = namesFrom(balance.data)

  const rows = usePagedList<Row>(async (cursor, signal) => {
    const params: UsageParams = {
      start_time: startOfDayIn(filters.from, zone),
      end_time: startOfDayIn(nextDate(filters.to), zone),
      bucket_width: filters.width,
      group_by: filters.groupBy,
      limit: filters.width === '1d' ? 7 : 24,
      page: cursor,
      ...(filters.projectId ? { project_ids: [filters.projectId] } : {}),
      ...(filters.apiKeyId ? { api_key_ids: [filters.apiKeyId] } : {}),
      ...(filters.model ? { models: [filters.model] } : {}),
      ...(filters.endpoint ? { endpoint: filters.endpoint } : {}),
    }
    const page = await api().organization.usage.page(params, { signal })
    return { data: page.data.flatMap((bucket) => bucket.results.map((result) => ({ bucket, result }))), next: page.has_more ? page.next_page : null }
  }, [filters, zone])

  const form = useForm({
    initial: { ...filters, groupBy: filters.groupBy as string[] },
    validate: (values) => ({
      from: values.from === '' ? 'Pick the first day.' : undefined,
      to: values.to === '' ? 'Pick the last day.' : values.to < values.from ? 'The last day comes before the first.' : undefined,
    }),
    submit: async (values) => setFilters({ ...values, groupBy: values.groupBy as GroupField[] } as Filters),
  })

  const columns: Column<Row>[] = [
    { header: filters.width === '1d' ? 'Day' : 'Hour', cell: ({ bucket }) => formatBucket(bucket.start_time, filters.width, zone) },
    ...groupFields
      .filter((field) => filters.groupBy.includes(field.id))
      .map((field) => ({ header: field.label, cell: ({ result }: Row) => <bdi>{groupLabel(result, field.id, names)}</bdi> })),
    { header: 'Requests', numeric: true, cell: ({ result }) => formatCount(result.num_model_requests) },
    { header: 'Input tokens', numeric: true, cell: ({ result }) => formatCount(result.input_tokens) },
    { header: 'Output tokens', numeric: true, cell: ({ result }) => formatCount(result.output_tokens) },
    { header: 'Cost', numeric: true, cell: ({ result }) => formatEgp(result.cost_egp) },
  ]

  const keysOfProject = (balance.data?.api_keys ?? []).filter((key) => !form.values.projectId || key.project_id === form.values.projectId)

  return (
    <div>
      <PageHeader title="Usage" description={`Requests, tokens and cost in EGP. Days are those of the billing time zone, ${describeTimeZone(zone)}.`} />
      <Form state={form} label="Usage filters">
        <div class="filters">
          <TextField label="From" type="date" {...form.text('from')} error={form.errors.from} />
          <TextField label="To" type="date" {...form.text('to')} error={form.errors.to} />
          <SelectField label="Per" value={form.values.width} onChange={(event) => form.set('width', event.currentTarget.value as '1d' | '1h')}>
            <option value="1d">Day</option>
            <option value="1h">Hour</option>
          </SelectField>
          <SelectField label="Endpoint" value={form.values.endpoint} onChange={(event) => form.set('endpoint', event.currentTarget.value as Filters['endpoint'])}>
            <option value="">All</option>
            <option value="completions">Chat completions</option>
            <option value="embeddings">Embeddings</option>
          </SelectField>
          <SelectField
            label="Project"
            value={form.values.projectId}
            onChange={(event) => {
              form.set('projectId', event.currentTarget.value)
              form.set('apiKeyId', '')
            }}
          >
            <option value="">All projects</option>
            {(balance.data?.projects ?? []).map((project) => (
              <option key={project.id} value={project.id}>
                {project.name}
              </option>
            ))}
          </SelectField>
          <SelectField label="API key" value={form.values.apiKeyId} onChange={(event) => form.set('apiKeyId', event.currentTarget.value)}>
            <option value="">All keys</option>
            {keysOfProject.map((key) => (
              <option key={key.id} value={key.id}>
                {key.name}
              </option>
            ))}
          </SelectField>
          <TextField label="Model" optional placeholder="nile/llama-3.3-70b-instruct" {...form.text('model')} error={form.errors.model} />
        </div>
        <fieldset class="filters">
          <legend>Group by</legend>
          {groupFields.map((field) => (
            <CheckboxField
              key={field.id}
              label={field.label}
              checked={form.values.groupBy.includes(field.id)}
              onChange={(on) => form.set('groupBy', on ? [...form.values.groupBy, field.id] : form.values.groupBy.filter((id) => id !== field.id))}
            />
          ))}
        </fieldset>
        <div class="form-actions">
          <Button type="submit" variant="primary">
            Show usage
          </Button>
        </div>
      </Form>
      <PagedTable
        caption={`Usage per ${filters.width === '1d' ? 'day' : 'hour'}`}
        list={rows}
        columns={columns}
        rowKey={({ bucket, result }) => `${bucket.start_time}/${result.model}/${result.project_id}/${result.api_key_id}`}
        empty={<p class="muted">No usage matches these filters.</p>}
      />
    </div>
  )
}
