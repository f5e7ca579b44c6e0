import { asc, eq } from 'drizzle-orm'
import { newId } from '../../../core/api-keys'
import type { StoredDeployment } from '../../../core/catalog'
import type { DeploymentSettings, DeploymentStore } from '../../../core/governance/deployments'
import type { Drizzle } from '../drizzle'
import { deployments } from '../schema'
import { appendAudit, unixSeconds } from './common'

type DeploymentRow = typeof deployments.$inferSelect

function toStoredDeployment(row: DeploymentRow): StoredDeployment {
  return {
    id: row.id,
    modelId: row.modelId,
    provider: row.provider,
    baseUrl: row.baseUrl,
    upstreamModel: row.upstreamModel,
    region: row.region,
    weight: row.weight,
    maxConcurrent: row.maxConcurrent,
    timeouts: { connectMs: row.connectTimeoutMs, firstTokenMs: row.firstTokenTimeoutMs, idleMs: row.idleTimeoutMs, totalMs: row.totalTimeoutMs },
    apiKeyEnv: row.apiKeyEnv,
    developerRole: row.developerRole,
    createdAt: unixSeconds(row.createdAt),
  }
}

/** What an audit record keeps of a deployment: its settings, which name the key's variable and never hold the key. */
function auditFields(deployment: DeploymentSettings) {
  return {
    model_id: deployment.modelId,
    provider: deployment.provider,
    base_url: deployment.baseUrl,
    upstream_model: deployment.upstreamModel,
    region: deployment.region,
    weight: deployment.weight,
    max_concurrent: deployment.maxConcurrent,
    api_key_env: deployment.apiKeyEnv,
    developer_role: deployment.developerRole,
  }
}

async function readDeployments(db: Drizzle): Promise<StoredDeployment[]> {
  const rows = await db.select().from(deployments).orderBy(asc(deployments.createdAt), asc(deployments.id))
  return rows.map(toStoredDeployment)
}

export function createDeploymentRepository(db: Drizzle): DeploymentStore {
  return {
    listDeployments: () => readDeployments(db),

    async addDeployment(settings, actor) {
      return db.transaction(async (tx) => {
        const { timeouts, ...fields } = settings
        const [row] = await tx
          .insert(deployments)
          .values({
            id: newId('dep'),
            ...fields,
            connectTimeoutMs: timeouts.connectMs,
            firstTokenTimeoutMs: timeouts.firstTokenMs,
            idleTimeoutMs: timeouts.idleMs,
            totalTimeoutMs: timeouts.totalMs,
          })
          .returning()
        await appendAudit(tx, actor, { orgId: null, action: 'deployment.created', targetType: 'deployment', targetId: row!.id, before: null, after: auditFields(settings) })
        return { added: toStoredDeployment(row!), deployments: await readDeployments(tx) }
      })
    },

    async removeDeployment(id, actor) {
      return db.transaction(async (tx) => {
        const [row] = await tx.delete(deployments).where(eq(deployments.id, id)).returning()
        if (!row) return null
        const removed = toStoredDeployment(row)
        await appendAudit(tx, actor, { orgId: null, action: 'deployment.deleted', targetType: 'deployment', targetId: id, before: auditFields(removed), after: null })
        return { removed, deployments: await readDeployments(tx) }
      })
    },
  }
}
