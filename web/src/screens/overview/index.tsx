import { useState } from 'preact/hooks'
import { api } from '../../lib/api'
import { describeTimeZone, egpToMicros, formatEgp, formatMonth, microsToEgp, sharePercent } from '../../lib/format'
import type { Balance } from '../../lib/sdk'
import { billingTimeZone, currentMembership } from '../../lib/session'
import { useResource } from '../../lib/use-resource'
import { DataTable, ErrorAlert, PageHeader, Section, Skeleton } from '../../ui'
import { UsageCharts } from './usage-charts'

type SpendLine = Balance['projects'][number]

/** /: the balance, this month's spend per project and key against their caps, and usage charts. */
export function OverviewPage() {
  const zone = billingTimeZone.value
  const balance = useResource((signal) => api().organization.balance.retrieve({ signal }), [])
  const organizationName = currentMembership.value?.name ?? ''

  return (
    <div>
      <PageHeader
        title="Overview"
        description={
          <>
            <bdi>{organizationName}</bdi>: money in EGP; days and months in the billing time zone, {describeTimeZone(balance.data?.billing_time_zone ?? zone)}.
          </>
        }
      />
      <ErrorAlert problem={balance.problem} onRetry={balance.reload} />
      <Section title="Balance">
        {balance.data ? <BalanceCards balance={balance.data} /> : <Skeleton lines={2} label="Loading the balance…" />}
      </Section>
      {balance.data && (
        <div class="form-grid">
          <Section title="Spend this month by project">
            <SpendTable lines={balance.data.projects} caption="Month-to-date spend per project" kind="project" />
          </Section>
          <Section title="Spend this month by API key">
            <SpendTable lines={balance.data.api_keys} caption="Month-to-date spend per API key" kind="key" projects={balance.data.projects} />
          </Section>
        </div>
      )}
      <UsageCharts balance={balance.data} />
    </div>
  )
}

function BalanceCards({ balance }: { balance: Balance }) {
  const held = egpToMicros(balance.balance_egp) - egpToMicros(balance.available_egp)
  return (
    <div class="cards">
      <div class="card">
        <p class="card-label">Balance</p>
        <p class="card-value">{formatEgp(balance.balance_egp)}</p>
        <p class="muted small">Credit less recorded usage.</p>
      </div>
      <div class="card">
        <p class="card-label">Available now</p>
        <p class="card-value">{formatEgp(balance.available_egp)}</p>
        <p class="muted small">{held > 0n ? `${formatEgp(microsToEgp(held))} is held by requests running now.` : 'Nothing is held by running requests.'}</p>
      </div>
      <div class="card">
        <p class="card-label">Spent in {formatMonth(balance.month)}</p>
        <p class="card-value">{formatEgp(balance.month_to_date_spend_egp)}</p>
        <p class="muted small">Since the 1st, {balance.billing_time_zone}.</p>
      </div>
    </div>
  )
}

function SpendTable({ lines, caption, kind, projects }: { lines: SpendLine[]; caption: string; kind: 'project' | 'key'; projects?: SpendLine[] }) {
  const [showAll, setShowAll] = useState(false)
  const sorted = [...lines].sort((a, b) => {
    const difference = egpToMicros(b.month_to_date_spend_egp) - egpToMicros(a.month_to_date_spend_egp)
    return difference > 0n ? 1 : difference < 0n ? -1 : a.name.localeCompare(b.name)
  })
  const rows = showAll ? sorted : sorted.slice(0, 8)
  return (
    <>
      <DataTable
        caption={caption}
        hideCaption
        rows={rows}
        rowKey={(line) => line.id}
        empty={<p class="muted">{kind === 'project' ? 'No projects yet.' : 'No API keys yet.'}</p>}
        columns={[
          {
            header: kind === 'project' ? 'Project' : 'Key',
            cell: (line) =>
              kind === 'project' ? (
                <a href={`/projects/${encodeURIComponent(line.id)}`}>
                  <bdi>{line.name}</bdi>
                </a>
              ) : (
                <>
                  <bdi>{line.name}</bdi>
                  {line.project_id && (
                    <span class="muted small">
                      {' '}
                      in <bdi>{projects?.find((project) => project.id === line.project_id)?.name ?? line.project_id}</bdi>
                    </span>
                  )}
                </>
              ),
          },
          { header: 'Spent', numeric: true, cell: (line) => formatEgp(line.month_to_date_spend_egp) },
          {
            header: 'Monthly cap',
            cell: (line) => {
              const share = sharePercent(line.month_to_date_spend_egp, line.monthly_spend_cap_egp)
              if (share === null || line.monthly_spend_cap_egp === null) return <span class="muted">No cap</span>
              return (
                <>
                  <span class="small">
                    {formatEgp(line.monthly_spend_cap_egp)} ({Math.min(share, 999).toFixed(0)}%)
                  </span>
                  <meter class="meter" min={0} max={100} low={75} high={90} optimum={0} value={Math.min(share, 100)} aria-label={`${line.name}: ${share.toFixed(0)}% of its cap`} />
                </>
              )
            },
          },
        ]}
      />
      {sorted.length > 8 && (
        <button type="button" class="link-button" onClick={() => setShowAll(!showAll)}>
          {showAll ? 'Show fewer' : `Show all ${sorted.length}`}
        </button>
      )}
    </>
  )
}

