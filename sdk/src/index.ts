import type * as chat from '@nilegate/shared/schemas/chat'
import type * as common from '@nilegate/shared/schemas/common'

export { Nilegate, type CsrfToken, type NilegateOptions } from './client'
export { NilegateConnectionError, NilegateError, NilegateTimeoutError, type ErrorCode } from './errors'
export { ChatCompletionStream } from './streaming'
export type { RequestOptions } from './api'
export type { FetchLike } from './transport'
export type { ListPage, ListParams } from './pagination'
export type { ChatCompletion, ChatCompletionChunk, FinishReason, ToolCallDelta } from '@nilegate/shared/schemas/chat'
export type { ModelList, ModelObject } from '@nilegate/shared/schemas/models'
export type { ModelRetirement, ModelRetirementList } from './resources/changelog'
export type { ChatCompletionCreateParams, ChatCompletionCreateParamsNonStreaming, ChatCompletionCreateParamsStreaming } from './resources/chat'
export type { CreateEmbeddingResponse, Embedding, EmbeddingCreateParams } from './resources/embeddings'
export type { AuthSession, AuthSessionRevoked, EmailVerification, LoginParams, Me, Session, SignupParams, User } from './resources/auth'
export type { Organization, OrganizationCreateParams } from './resources/organizations'
export type { OrganizationUpdateParams } from './resources/organization'
export type { Invite, InviteCreateParams, OrganizationUser, OrganizationUserUpdateParams } from './resources/members'
export type { ApiKey, ApiKeyCreateParams, ApiKeyUpdateParams, ApiKeyWithSecret, Project, ProjectCreateParams, ProjectListParams, ProjectUpdateParams } from './resources/projects'
export type { Balance, UsageBucket, UsagePage, UsageParams } from './resources/usage'
export type { AuditLog, AuditLogListParams } from './resources/audit-logs'
export type {
  AdminCredit,
  AdminCreditParams,
  AdminCreditTransaction,
  AdminOrganization,
  AdminOrganizationListParams,
  AdminOrganizationUpdateParams,
  AdminUser,
  AdminUserListParams,
  Deployment,
  DeploymentCreateParams,
  ModelRetirementParams,
  UnbilledUsage,
  UnbilledUsageListParams,
} from './resources/admin'

// Aliases rather than re-exports: the shared names are TypeBox schemas too, and only their types are published.
/** One message of a conversation: system or developer, user, assistant, or tool. */
export type ChatMessage = chat.ChatMessage
/** A part of a message's content: text, image, audio, file or refusal. */
export type ContentPart = chat.ContentPart
/** A tool call made by the assistant. */
export type ToolCall = chat.ToolCall
/** Token counts of one request. */
export type Usage = common.Usage
