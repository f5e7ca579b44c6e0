import { useState } from 'preact/hooks'
import { accountApi } from '../../lib/api'
import { dateInZone, formatCount, formatDateTime, formatEgp } from '../../lib/format'
import type { ModelObject, UnbilledUsage } from '../../lib/sdk'
import { cursorPage, usePagedList, useResource } from '../../lib/use-resource'
import { Badge, Button, ConfirmDialog, DataTable, Dialog, EmptyState, ErrorAlert, Form, PageHeader, PagedTable, SearchForm, Section, SelectField, Skeleton, SuccessAlert, TextField, statusTone, useForm, type Column } from '../../ui'
import { listAllModels } from '../models/catalog'
import { formatCatalogDate, modelPath } from '../models/lifecycle'
import { localTimeZone, OperatorGate } from './operator-gate'

/** Operators: the catalog's lifecycle (retire a model on a date, naming its replacement) and the usage upstreams reported beyond holds. */
export function AdminModelsPage() {
  const catalog = useResource((signal) => listAllModels(accountApi(), { signal }), [])
  const [retiring, setRetiring] = useState<ModelObject | null>(null)
  const [cancelling, setCancelling] = useState<ModelObject | null>(null)
  const [notice, setNotice] = useState<string | null>(null)
  const models = catalog.data ?? []

  const replaced = (next: ModelObject) => catalog.setData((current) => current?.map((model) => (model.id === next.id ? next : model)))

  const columns: Column<ModelObject>[] = [
    { header: 'Model', cell: (model) => <a href={modelPath(model.id)}>{model.id}</a> },
    { header: 'Modality', cell: (model) => model.modality },
    { header: 'Status', cell: (model) => <Badge tone={model.status === 'Live' && model.shutdown_date ? 'warning' : statusTone(model.status)}>{model.status === 'Live' && model.shutdown_date ? 'Live, retiring' : model.status}</Badge> },
    { header: 'Retires on', cell: (model) => formatCatalogDate(model.shutdown_date) },
    { header: 'Replacement', cell: (model) => (model.replacement ? <code>{model.replacement}</code> : '—') },
    {
      header: 'Actions',
      hiddenHeader: true,
      cell: (model) =>
        model.status === 'Live' ? (
          <div class="actions">
            <Button small onClick={() => setRetiring(model)} aria-label={`Retire ${model.id}`}>
              {model.shutdown_date ? 'Change retirement' : 'Retire'}
            </Button>
            {model.shutdown_date && (
              <Button small variant="ghost" onClick={() => setCancelling(model)} aria-label={`Cancel the retirement of ${model.id}`}>
                Cancel retirement
              </Button>
            )}
          </div>
        ) : null,
    },
  ]

  return (
    <OperatorGate title="Model retirements">
      <PageHeader title="Model retirements" description="Retire a model on a date and name its replacement: callers get Deprecation and Sunset headers until then, model_sunset after." />
      {notice && <SuccessAlert>{notice}</SuccessAlert>}
      <Section title="Catalog">
        {catalog.data === undefined ? (
          catalog.problem ? <ErrorAlert problem={catalog.problem} onRetry={catalog.reload} /> : <Skeleton lines={5} />
        ) : (
          <DataTable caption="Catalog models" hideCaption columns={columns} rows={models} rowKey={(model) => model.id} empty={<EmptyState title="The catalog is empty." />} />
        )}
      </Section>
      {retiring && (
        <RetireDialog
          model={retiring}
          models={models}
          onClose={() => setRetiring(null)}
          onRetired={(next) => {
            replaced(next)
            setRetiring(null)
            setNotice(`${next.id} retires on ${next.shutdown_date}.`)
          }}
        />
      )}
      <ConfirmDialog
        open={cancelling !== null}
        title={`Cancel the retirement of ${cancelling?.id ?? ''}?`}
        confirmLabel="Cancel retirement"
        onClose={() => setCancelling(null)}
        onConfirm={async () => {
          const model = cancelling!
          await accountApi().admin.models.cancelRetirement(model.id)
          replaced({ ...model, shutdown_date: null, replacement: null })
          setNotice(`${model.id} is no longer scheduled to retire.`)
        }}
      >
        <p>The model stays live with no date. A retirement set in the catalog file stays: change the file for that.</p>
      </ConfirmDialog>
      <UnbilledUsageSection />
    </OperatorGate>
  )
}

type RetireValues = { retires_on: string; replacement: string }

/** The retirement of one model: a date (confirmed) and, optionally, a live model of the same modality to move to. */
function RetireDialog({ model, models, onClose, onRetired }: { model: ModelObject; models: ModelObject[]; onClose: () => void; onRetired: (next: ModelObject) => void }) {
  const replacements = models.filter((other) => other.status === 'Live' && other.id !== model.id && other.modality === model.modality)
  const form = useForm<RetireValues>({
    initial: { retires_on: model.shutdown_date ?? dateInZone('UTC', -30), replacement: model.replacement ?? '' },
    validate: (values) => ({ retires_on: /^\d{4}-\d{2}-\d{2}$/.test(values.retires_on) ? undefined : 'Choose a date.' }),
    submit: async (values) => onRetired(await accountApi().admin.models.retire(model.id, { retires_on: values.retires_on, replacement: values.replacement === '' ? null : values.replacement })),
  })
  const past = form.values.retires_on !== '' && form.values.retires_on <= dateInZone('UTC')

  return (
    <Dialog open title={`Retire ${model.id}`} onClose={onClose}>
      <Form state={form} label={`Retire ${model.id}`}>
        <TextField label="Retires on" type="date" hint="The model stops answering at the start of this day (UTC)." error={form.errors.retires_on} {...form.text('retires_on')} />
        {past && <p class="alert alert-warning">This date is today or past: the model stops answering as soon as you confirm.</p>}
        <SelectField label="Replacement" optional hint="Named in the changelog and in the model_sunset error." error={form.errors.replacement} value={form.values.replacement} onChange={(event) => form.set('replacement', event.currentTarget.value)}>
          <option value="">No replacement</option>
          {replacements.map((other) => (
            <option key={other.id} value={other.id}>
              {other.id}
            </option>
          ))}
        </SelectField>
        <div class="dialog-actions">
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" variant="danger" busy={form.submitting}>
            Retire model
          </Button>
        </div>
      </Form>
    </Dialog>
  )
}

/** Requests whose upstream reported more usage than their hold: billed up to the hold, the rest listed here. */
function UnbilledUsageSection() {
  const [organization, setOrganization] = useState('')
  const [applied, setApplied] = useState('')
  const list = usePagedList(
    (cursor, signal) => accountApi().admin.unbilledUsage.page(applied === '' ? { after: cursor, limit: 25 } : { after: cursor, limit: 25, organization_id: applied }, { signal }).then(cursorPage),
    [applied],
  )
  const columns: Column<UnbilledUsage>[] = [
    { header: 'When', cell: (usage) => formatDateTime(usage.created_at, localTimeZone) },
    { header: 'Organization', cell: (usage) => <a href={`/admin/organizations/${encodeURIComponent(usage.organization_id)}`}>{usage.organization_id}</a> },
    { header: 'Model', cell: (usage) => <code>{usage.model}</code> },
    { header: 'Reported tokens (in / out)', numeric: true, cell: (usage) => `${formatCount(usage.reported_prompt_tokens)} / ${formatCount(usage.reported_completion_tokens)}` },
    { header: 'Billed tokens (in / out)', numeric: true, cell: (usage) => `${formatCount(usage.billed_prompt_tokens)} / ${formatCount(usage.billed_completion_tokens)}` },
    { header: 'Billed', numeric: true, cell: (usage) => formatEgp(usage.billed_egp) },
    { header: 'Not billed', numeric: true, cell: (usage) => formatEgp(usage.unbilled_egp) },
    { header: 'Request', cell: (usage) => <code>{usage.id}</code> },
  ]
  return (
    <Section title="Unbilled usage">
      <p class="muted">Settlement never charges more than a request's hold; what an upstream reported beyond it is recorded here.</p>
      <SearchForm label="Filter unbilled usage" submitLabel="Filter" onSearch={() => setApplied(organization.trim())}>
        <TextField label="Organization ID" optional autocomplete="off" value={organization} onInput={(event) => setOrganization(event.currentTarget.value)} />
      </SearchForm>
      <PagedTable list={list} caption="Requests with unbilled usage" hideCaption columns={columns} rowKey={(usage) => usage.id} empty={<EmptyState title="No unbilled usage." />} />
    </Section>
  )
}
