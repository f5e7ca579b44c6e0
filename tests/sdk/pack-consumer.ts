/**
 * The program an npm user of @nilegate/sdk would write, kept as text: it is compiled inside a
 * temporary Node project against the packed tarball (this repository's type check never sees it,
 * since '@nilegate/sdk' resolves to the built package only there). The `@ts-expect-error` lines
 * prove that the published types reject a wrong message role and a misspelt error code: were
 * they accepted, tsc would report the unused directives. It prints what it got as one JSON line.
 */
export const consumerSource = `
import { Nilegate, NilegateError, type ChatMessage, type ModelRetirement, type Project } from '@nilegate/sdk'

declare const process: { env: Record<string, string | undefined> }
const env = (name: string): string => {
  const value = process.env[name]
  if (value === undefined) throw new Error('missing ' + name)
  return value
}

const ng = new Nilegate({ baseURL: env('NILEGATE_BASE_URL'), apiKey: env('NILEGATE_API_KEY') })
const messages: ChatMessage[] = [{ role: 'user', content: 'Hello from Node' }]

const models = await ng.models.list()
const chatModel = models.data.find((model) => model.modality === 'Chat')!.id
const embeddingsModel = models.data.find((model) => model.modality === 'Embeddings')!.id
const retrieved = await ng.models.retrieve(chatModel)
const retirements: ModelRetirement[] = (await ng.changelog.list()).data

const completion = await ng.chat.completions.create({ model: chatModel, messages, max_tokens: 16 })
const reply: string | null = completion.choices[0]!.message.content

const stream = await ng.chat.completions.create({ model: chatModel, messages, max_tokens: 16, stream: true })
let streamed = ''
for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? ''

const { data } = await ng.embeddings.create({ model: embeddingsModel, input: ['النيل', 'the Nile'] })
const vector: number[] = data[0]!.embedding

let errorCode: string | null = null
try {
  await ng.chat.completions.create({ model: 'nile/no-such-model', messages })
} catch (error) {
  if (error instanceof NilegateError && error.code === 'model_not_found') errorCode = error.code
}

const admin = new Nilegate({ baseURL: env('NILEGATE_BASE_URL') })
await admin.auth.login({ email: env('NILEGATE_EMAIL'), password: env('NILEGATE_PASSWORD') })
const projects: Project[] = []
for await (const project of admin.organization.projects.list({ limit: 1 })) projects.push(project)
const key = await admin.organization.projects.apiKeys(projects[0]!.id).create({ name: 'from the pack test' })
// A retry the gateway answered from its idempotency record shows no secret a second time.
if (key.value === null) throw new Error('the key was created by an earlier try; its secret was shown then')
const withNewKey = new Nilegate({ baseURL: env('NILEGATE_BASE_URL'), apiKey: key.value })
const modelsWithNewKey = await withNewKey.models.list()
await admin.auth.logout()

console.log(JSON.stringify({
  retrievedId: retrieved.id,
  retiredModels: retirements.filter((retirement) => retirement.status === 'retired').length,
  chatModel,
  reply,
  streamed,
  streamUsage: stream.usage,
  vectorLength: vector.length,
  vectorIsNumbers: vector.every((value) => typeof value === 'number'),
  errorCode,
  projectIds: projects.map((project) => project.id),
  newKeyPrefix: key.value.slice(0, 3),
  modelsWithNewKey: modelsWithNewKey.data.length,
  loggedOut: admin.accessToken === null,
}))

/** Never called: these lines only have to fail to compile. */
export async function rejectedByTheTypes(error: NilegateError) {
  // @ts-expect-error 'robot' is not a message role
  await ng.chat.completions.create({ model: chatModel, messages: [{ role: 'robot', content: 'Hi' }] })
  // @ts-expect-error 'insuficient_balance' is not a code of the catalog
  return error.code === 'insuficient_balance'
}
`
