import { useEffect, useState } from 'preact/hooks'
import { accountApi, reportError, type ApiProblem } from '../../lib/api'
import { formatCount } from '../../lib/format'
import type { Deployment } from '../../lib/sdk'
import { Badge, Button, DataTable, EmptyState, ErrorAlert, PageHeader, Skeleton, statusTone } from '../../ui'
import { OperatorGate } from './operator-gate'

const refreshMs = 5_000

const circuitWords: Record<string, string> = { closed: 'closed (healthy)', open: 'open (not used)', half_open: 'half-open (probing)' }

/** Operators: every deployment the router sends to, with its circuit and requests in flight, refreshed every few seconds. */
export function AdminDeploymentsPage() {
  const [deployments, setDeployments] = useState<Deployment[] | null>(null)
  const [problem, setProblem] = useState<ApiProblem | null>(null)
  const [updatedAt, setUpdatedAt] = useState<Date | null>(null)
  const [paused, setPaused] = useState(false)
  const [round, setRound] = useState(0)

  useEffect(() => {
    const controller = new AbortController()
    let timer: ReturnType<typeof setTimeout> | undefined
    const load = async () => {
      try {
        const page = await accountApi().admin.deployments.list({}, { signal: controller.signal })
        setDeployments(page.data)
        setProblem(null)
        setUpdatedAt(new Date())
      } catch (error) {
        if (controller.signal.aborted) return
        setProblem(reportError(error))
      }
      // Not while the tab is hidden: the next visible moment loads at once.
      if (!paused && !controller.signal.aborted) timer = setTimeout(() => void (document.hidden ? waitVisible() : load()), refreshMs)
    }
    const waitVisible = () => document.addEventListener('visibilitychange', load, { once: true, signal: controller.signal })
    void load()
    return () => {
      controller.abort()
      clearTimeout(timer)
    }
  }, [paused, round])

  const inFlight = deployments?.reduce((total, deployment) => total + deployment.in_flight, 0) ?? 0

  return (
    <OperatorGate title="Deployments">
      <PageHeader
        title="Deployments"
        description="Where each model is served, the circuit of each deployment and its requests in flight, as this gateway instance sees them."
        actions={
          <>
            <Button onClick={() => setPaused(!paused)}>
              {paused ? 'Resume updates' : 'Pause updates'}
            </Button>
            <Button onClick={() => setRound(round + 1)}>Refresh now</Button>
          </>
        }
      />
      <p class="muted small" aria-live="off">
        {updatedAt ? `Updated ${updatedAt.toLocaleTimeString()}${paused ? ' (paused)' : `, every ${refreshMs / 1000} seconds`}.` : ''} {deployments ? `${formatCount(inFlight)} requests in flight.` : ''}
      </p>
      <ErrorAlert problem={problem} onRetry={() => setRound(round + 1)} />
      {deployments === null ? (
        !problem && <Skeleton lines={5} />
      ) : (
        <DataTable
          caption="Deployments"
          hideCaption
          rows={deployments}
          rowKey={(deployment) => deployment.id}
          empty={<EmptyState title="No deployments." />}
          columns={[
            { header: 'Model', cell: (deployment) => <code>{deployment.model_id}</code> },
            { header: 'Deployment', cell: (deployment) => <code>{deployment.id}</code> },
            { header: 'Provider', cell: (deployment) => deployment.provider },
            { header: 'Region', cell: (deployment) => deployment.region },
            { header: 'Weight', numeric: true, cell: (deployment) => formatCount(deployment.weight) },
            { header: 'Circuit', cell: (deployment) => <Badge tone={statusTone(deployment.circuit.state)}>{circuitWords[deployment.circuit.state] ?? deployment.circuit.state}</Badge> },
            { header: 'In flight', numeric: true, cell: (deployment) => formatCount(deployment.in_flight) },
            { header: 'Max concurrent', numeric: true, cell: (deployment) => (deployment.max_concurrent === null ? 'no limit' : formatCount(deployment.max_concurrent)) },
            { header: 'Source', cell: (deployment) => (deployment.source === 'file' ? 'catalog file' : 'added by an operator') },
          ]}
        />
      )}
    </OperatorGate>
  )
}
