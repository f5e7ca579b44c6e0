import { GatewayError } from '@nilegate/shared/errors'
import { defaultTimeouts, normalizeBaseUrl, type Catalog, type Deployment, type DeveloperRole, type StoredDeployment } from '../catalog'
import type { AuditActor } from './audit'
import type { ChangeBus } from './changes'
import { followStored } from './follow-stored'

/** What an operator sends to add a deployment; absent fields take the model's values or the defaults. */
export interface NewDeployment {
  modelId: string
  provider: Deployment['provider']
  baseUrl?: string
  upstreamModel?: string
  region?: string
  weight?: number
  maxConcurrent?: number | null
  timeouts?: Partial<Deployment['timeouts']>
  apiKeyEnv?: string | null
  developerRole?: DeveloperRole
}

/** A deployment to store, complete but for the id and time the database gives it. */
export type DeploymentSettings = Omit<StoredDeployment, 'id' | 'createdAt'>

/** Deployments operators store in the database (/v1/admin/deployments). */
export interface DeploymentStore {
  /** Every stored deployment, oldest first. */
  listDeployments(): Promise<StoredDeployment[]>
  /** Stores a deployment under a new id, audited; returns it and every stored deployment after the change. */
  addDeployment(settings: DeploymentSettings, actor: AuditActor): Promise<{ added: StoredDeployment; deployments: StoredDeployment[] }>
  /** Removes a stored deployment, audited; null when there is none with this id. */
  removeDeployment(id: string, actor: AuditActor): Promise<{ removed: StoredDeployment; deployments: StoredDeployment[] } | null>
}

/**
 * The deployment an operator asked for, with the model's region and name and the default
 * deadlines filled in. 400 for a model the catalog lacks or its file retired, a base_url that is not
 * an http(s) URL (or carries credentials), and a base_url missing from (or given to the simulator
 * besides) the provider that needs one.
 */
export function resolveNewDeployment(catalog: Catalog, input: NewDeployment): DeploymentSettings {
  const model = catalog.find(input.modelId)
  if (!model) throw new GatewayError('invalid_request', `'${input.modelId}' is not a model of the catalog.`, 'model_id')
  if (catalog.isRetiredByFile(model.id)) throw new GatewayError('invalid_request', `The model '${model.id}' is retired by the catalog file and takes no deployments.`, 'model_id')
  let baseUrl: string | null = null
  if (input.provider === 'openai-compatible') {
    if (input.baseUrl === undefined) throw new GatewayError('invalid_request', 'An openai-compatible deployment needs a base_url.', 'base_url')
    try {
      baseUrl = normalizeBaseUrl(input.baseUrl)
    } catch (error) {
      throw new GatewayError('invalid_request', `Invalid base_url: ${(error as Error).message.replace(/^base_url /, '')}.`, 'base_url')
    }
  } else if (input.baseUrl !== undefined) {
    throw new GatewayError('invalid_request', 'A simulator deployment takes no base_url.', 'base_url')
  }
  return {
    modelId: model.id,
    provider: input.provider,
    baseUrl,
    upstreamModel: input.upstreamModel ?? model.id,
    region: input.region ?? model.region,
    weight: input.weight ?? 1,
    maxConcurrent: input.maxConcurrent ?? null,
    timeouts: {
      connectMs: input.timeouts?.connectMs ?? defaultTimeouts.connectMs,
      firstTokenMs: input.timeouts?.firstTokenMs ?? defaultTimeouts.firstTokenMs,
      idleMs: input.timeouts?.idleMs ?? defaultTimeouts.idleMs,
      totalMs: input.timeouts?.totalMs ?? defaultTimeouts.totalMs,
    },
    apiKeyEnv: input.apiKeyEnv ?? null,
    developerRole: input.developerRole ?? 'developer',
  }
}

/**
 * Keeps this gateway's catalog in step with the stored deployments: now, whenever any instance
 * announces a change, and every `refreshMs` in case an announcement was lost. Returns how to stop.
 */
export function followDeployments(catalog: Catalog, store: Pick<DeploymentStore, 'listDeployments'>, changes: ChangeBus, options: { refreshMs?: number } = {}): Promise<() => void> {
  return followStored({ kind: 'deployments', what: 'the stored deployments', read: () => store.listDeployments(), apply: (deployments) => catalog.applyDeployments(deployments), changes, ...options })
}
