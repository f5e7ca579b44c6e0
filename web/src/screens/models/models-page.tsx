import { useState } from 'preact/hooks'
import { api } from '../../lib/api'
import { formatCount, formatEgp } from '../../lib/format'
import type { ModelObject, ModelRetirement } from '../../lib/sdk'
import { useResource } from '../../lib/use-resource'
import { DataTable, EmptyState, ErrorAlert, PageHeader, Section, SelectField, Skeleton, TextField, type Column } from '../../ui'
import { listOrganizationModels } from './catalog'
import { formatCatalogDate, LifecycleBadge, modelPath } from './lifecycle'

type ModalityFilter = '' | 'Chat' | 'Embeddings'

const columns: Column<ModelObject>[] = [
  {
    header: 'Model',
    cell: (model) => (
      <a href={modelPath(model.id)} class="model-id">
        {model.id}
      </a>
    ),
  },
  { header: 'Modality', cell: (model) => model.modality },
  {
    header: 'Context window',
    numeric: true,
    cell: (model) => (
      <>
        {model.context_window_label} <span class="muted small">({formatCount(model.context_window)})</span>
      </>
    ),
  },
  { header: 'Max output', numeric: true, cell: (model) => (model.modality === 'Chat' ? formatCount(model.max_output_tokens) : '—') },
  { header: 'Input, per 1M tokens', numeric: true, cell: (model) => formatEgp(model.input_price_egp_per_1m) },
  { header: 'Output, per 1M tokens', numeric: true, cell: (model) => (model.modality === 'Chat' ? formatEgp(model.output_price_egp_per_1m) : '—') },
  { header: 'Region', cell: (model) => model.region },
  { header: 'Lifecycle', cell: (model) => <Lifecycle model={model} /> },
]

function Lifecycle({ model }: { model: ModelObject }) {
  return (
    <>
      <LifecycleBadge model={model} />
      {model.replacement && (
        <span class="small">
          {' '}
          → <a href={modelPath(model.replacement)}>{model.replacement}</a>
        </span>
      )}
    </>
  )
}

/** Whether `model` matches what was typed in the search box: its id, region or weights. */
function matches(model: ModelObject, search: string): boolean {
  const needle = search.trim().toLowerCase()
  return needle === '' || [model.id, model.region, model.weights, model.owned_by].some((text) => text.toLowerCase().includes(needle))
}

/** The catalog the organization may use, searchable, with prices in EGP and each model's lifecycle; then the changelog. */
export function ModelsPage() {
  const catalog = useResource((signal) => listOrganizationModels(api(), { signal }), [])
  const [search, setSearch] = useState('')
  const [modality, setModality] = useState<ModalityFilter>('')
  const shown = (catalog.data ?? []).filter((model) => matches(model, search) && (modality === '' || model.modality === modality))
  const samples = catalog.data?.some((model) => model.prices_are_samples) ?? false

  return (
    <>
      <PageHeader title="Models" description="The models your organization can call, with their limits and prices in EGP per million tokens." />
      <form role="search" class="filters" aria-label="Filter models" onSubmit={(event) => event.preventDefault()}>
        <TextField label="Search models" type="search" autocomplete="off" value={search} onInput={(event) => setSearch(event.currentTarget.value)} />
        <SelectField label="Modality" value={modality} onChange={(event) => setModality(event.currentTarget.value as ModalityFilter)}>
          <option value="">All</option>
          <option value="Chat">Chat</option>
          <option value="Embeddings">Embeddings</option>
        </SelectField>
      </form>
      {catalog.data === undefined ? (
        catalog.problem ? <ErrorAlert problem={catalog.problem} onRetry={catalog.reload} /> : <Skeleton lines={5} />
      ) : (
        <>
          <p class="muted small" aria-live="polite">
            {shown.length === catalog.data.length ? `${shown.length} models` : `${shown.length} of ${catalog.data.length} models`}
          </p>
          <DataTable caption="Models" hideCaption columns={columns} rows={shown} rowKey={(model) => model.id} empty={<EmptyState title="No model matches." />} />
          {samples && <p class="muted small price-note">Prices marked as samples in the catalog are illustrative, not a price list.</p>}
        </>
      )}
      <Changelog />
    </>
  )
}

/** GET /v1/changelog: retirements, scheduled and done, newest date first. */
function Changelog() {
  const changelog = useResource((signal) => api().changelog.list({ signal }), [])
  const columns: Column<ModelRetirement>[] = [
    { header: 'Model', cell: (entry) => <span class="model-id">{entry.model}</span> },
    { header: 'Modality', cell: (entry) => (entry.modality === 'chat' ? 'Chat' : 'Embeddings') },
    { header: 'Status', cell: (entry) => <LifecycleBadge model={{ status: entry.status === 'retired' ? 'Retired' : 'Live', shutdown_date: entry.retires_on }} /> },
    { header: 'Stops answering', cell: (entry) => formatCatalogDate(entry.retires_on) },
    { header: 'Replacement', cell: (entry) => (entry.replacement ? <a href={modelPath(entry.replacement)}>{entry.replacement}</a> : '—') },
  ]
  return (
    <Section title="Changelog">
      {changelog.data === undefined ? (
        changelog.problem ? <ErrorAlert problem={changelog.problem} onRetry={changelog.reload} /> : <Skeleton lines={3} />
      ) : (
        <DataTable
          caption="Model retirements"
          hideCaption
          columns={columns}
          rows={changelog.data.data}
          rowKey={(entry) => entry.model}
          empty={<EmptyState title="No retirements scheduled.">Every model of the catalog stays available.</EmptyState>}
        />
      )}
    </Section>
  )
}
