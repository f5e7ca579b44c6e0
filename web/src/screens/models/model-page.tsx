import { api } from '../../lib/api'
import { formatCount, formatEgp } from '../../lib/format'
import { can } from '../../lib/session'
import type { ModelObject } from '../../lib/sdk'
import { useResource } from '../../lib/use-resource'
import { ErrorAlert, LinkButton, PageHeader, Section, Skeleton } from '../../ui'
import { retrieveOrganizationModel } from './catalog'
import { formatCatalogDate, LifecycleBadge, modelPath } from './lifecycle'

/** The id in the page's path: its segments as the router matched them, each percent-decoded. */
function idFromPath(path: string): string {
  return path
    .split('/')
    .map((segment) => {
      try {
        return decodeURIComponent(segment)
      } catch {
        return segment
      }
    })
    .join('/')
}

/** One model of the catalog: its limits, prices and lifecycle. */
export function ModelPage({ id }: { id: string }) {
  const modelId = idFromPath(id)
  const model = useResource((signal) => retrieveOrganizationModel(api(), modelId, { signal }), [modelId])

  return (
    <>
      <p class="small">
        <a href="/models">Models</a>
      </p>
      <PageHeader
        title={modelId}
        description={model.data && <LifecycleBadge model={model.data} />}
        actions={model.data?.status === 'Live' && model.data.modality === 'Chat' && can('api_keys.manage') && <LinkButton href={`/playground?model=${encodeURIComponent(modelId)}`}>Try in the playground</LinkButton>}
      />
      {model.data === undefined ? model.problem ? <ErrorAlert problem={model.problem} onRetry={model.reload} /> : <Skeleton lines={8} /> : <ModelDetails model={model.data} />}
    </>
  )
}

function ModelDetails({ model }: { model: ModelObject }) {
  const chat = model.modality === 'Chat'
  return (
    <>
      <Section title="Limits and prices">
        <dl class="details">
          <dt>Modality</dt>
          <dd>{model.modality}</dd>
          <dt>Context window</dt>
          <dd>
            {model.context_window_label} ({formatCount(model.context_window)} tokens)
          </dd>
          {chat && (
            <>
              <dt>Max output</dt>
              <dd>{formatCount(model.max_output_tokens)} tokens</dd>
            </>
          )}
          {model.embedding_dimensions !== undefined && (
            <>
              <dt>Dimensions</dt>
              <dd>{formatCount(model.embedding_dimensions)}</dd>
            </>
          )}
          <dt>Input price</dt>
          <dd>{formatEgp(model.input_price_egp_per_1m)} per 1M tokens</dd>
          {chat && (
            <>
              <dt>Output price</dt>
              <dd>{formatEgp(model.output_price_egp_per_1m)} per 1M tokens</dd>
            </>
          )}
          <dt>Monthly example</dt>
          <dd>{formatEgp(model.monthly_cost_example_egp)} for 50M input and 15M output tokens a month</dd>
          <dt>Region</dt>
          <dd>{model.region}</dd>
          <dt>Weights</dt>
          <dd>{model.weights}</dd>
          <dt>Published</dt>
          <dd>{model.published}</dd>
          <dt>Served by</dt>
          <dd>{model.owned_by}</dd>
        </dl>
        {model.prices_are_samples && <p class="muted small">These prices are illustrative samples, not a price list.</p>}
      </Section>
      <Section title="Lifecycle">
        {model.status === 'Retired' ? (
          <p>
            Retired{model.shutdown_date ? ` on ${formatCatalogDate(model.shutdown_date)}` : ''}: requests answer <code>model_sunset</code>.
            {model.replacement && <> Use <a href={modelPath(model.replacement)}>{model.replacement}</a> instead.</>}
          </p>
        ) : model.shutdown_date ? (
          <p>
            Deprecated: it stops answering on {formatCatalogDate(model.shutdown_date)} (UTC); until then its answers carry <code>Deprecation</code> and <code>Sunset</code> headers.
            {model.replacement && <> Move to <a href={modelPath(model.replacement)}>{model.replacement}</a>.</>}
          </p>
        ) : (
          <p>Live, with no retirement scheduled.</p>
        )}
      </Section>
    </>
  )
}
