import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync } from 'node:fs'
import { createTempDir, slowHookTimeoutMs } from '../support/databases'
import { startGateway, type DemoTenantJson, type RunningGateway } from '../support/gateway-process'
import { consumerSource } from './pack-consumer'

const repoDir = new URL('../..', import.meta.url).pathname
const sdkDir = `${repoDir}sdk`
const typescriptVersion: string = (await Bun.file(`${repoDir}package.json`).json()).devDependencies.typescript

/** The settings of an ordinary Node ESM project; `skipLibCheck` as `tsc --init` sets it. */
const consumerTsconfig = {
  compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2022', 'DOM', 'DOM.Iterable'], strict: true, skipLibCheck: true, outDir: 'out' },
  files: ['consumer.ts'],
}

/** Runs a command to completion and returns what it printed; throws with that output when it fails. */
async function run(cmd: string[], cwd: string, env: Record<string, string> = {}): Promise<string> {
  const child = Bun.spawn(cmd, { cwd, env: { ...Bun.env, ...env }, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  if (code !== 0) throw new Error(`${cmd.join(' ')} exited with ${code}:\n${stdout}${stderr}`)
  return stdout
}

/** Builds and packs the SDK, then installs the tarball and TypeScript, nothing else, into a fresh Node project. */
async function installPackedSdk(root: string): Promise<{ projectDir: string; packedFiles: string[] }> {
  await run([process.execPath, 'run', '--cwd', sdkDir, 'build'], repoDir)
  const [packed] = JSON.parse(await run(['npm', 'pack', '--json', '--pack-destination', root], sdkDir)) as Array<{ filename: string; files: Array<{ path: string }> }>
  const projectDir = `${root}/consumer`
  mkdirSync(projectDir)
  await Bun.write(`${projectDir}/package.json`, JSON.stringify({ name: 'consumer', private: true, type: 'module' }))
  await Bun.write(`${projectDir}/tsconfig.json`, JSON.stringify(consumerTsconfig))
  await Bun.write(`${projectDir}/consumer.ts`, consumerSource)
  await run(['npm', 'install', '--no-audit', '--no-fund', '--prefer-offline', `${root}/${packed!.filename}`, `typescript@${typescriptVersion}`], projectDir)
  return { projectDir, packedFiles: packed!.files.map((file) => file.path).sort() }
}

describe('the packed @nilegate/sdk in a Node project', () => {
  const temp = createTempDir('sdk-pack')
  let gateway: RunningGateway
  let tenant: DemoTenantJson
  let installed: Awaited<ReturnType<typeof installPackedSdk>>

  beforeAll(async () => {
    const starting = startGateway({ database: 'pglite' })
    ;[installed, gateway] = await Promise.all([installPackedSdk(temp.path), starting])
    tenant = await gateway.createDemoTenant()
  }, slowHookTimeoutMs)

  afterAll(async () => {
    await gateway?.stop()
    temp.remove()
  })

  test('holds only the built JavaScript, its declarations and the README', () => {
    expect(installed.packedFiles).toEqual(['README.md', 'dist/index.d.ts', 'dist/index.js', 'package.json'])
  })

  test('runs on web APIs alone: the built file names no Bun, Node or process API', async () => {
    const built = await Bun.file(`${installed.projectDir}/node_modules/@nilegate/sdk/dist/index.js`).text()
    expect(built.match(/\bBun\.|["']node:|\bprocess\.|\brequire\(|\bBuffer\b/g)).toBeNull()
  })

  test('type-checks a consumer with tsc, rejecting a wrong role and a misspelt error code', async () => {
    await run([`${installed.projectDir}/node_modules/.bin/tsc`, '-p', '.'], installed.projectDir)
  })

  // The same built file under both runtimes; each run makes its own API key.
  test.each([
    ['node', 'node'],
    ['bun', process.execPath],
  ])('runs under %s against a live gateway: inference, errors and management', async (_, runtime) => {
    const printed = await run([runtime, 'out/consumer.js'], installed.projectDir, {
      NILEGATE_BASE_URL: gateway.baseUrl,
      NILEGATE_API_KEY: tenant.api_key,
      NILEGATE_EMAIL: tenant.email,
      NILEGATE_PASSWORD: tenant.password,
    })

    const result = JSON.parse(printed.trim().split('\n').at(-1)!)
    expect(result).toEqual({
      retrievedId: result.chatModel,
      retiredModels: expect.any(Number),
      chatModel: expect.stringContaining('/'),
      reply: expect.stringMatching(/\S/),
      streamed: result.reply,
      streamUsage: { prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number), total_tokens: expect.any(Number) },
      vectorLength: expect.any(Number),
      vectorIsNumbers: true,
      errorCode: 'model_not_found',
      projectIds: [tenant.project_id],
      newKeyPrefix: 'sk-',
      modelsWithNewKey: expect.any(Number),
      loggedOut: true,
    })
    expect(result.streamUsage.completion_tokens).toBeGreaterThan(0)
    expect(result.vectorLength).toBeGreaterThan(0)
    expect(result.modelsWithNewKey).toBeGreaterThan(0)
    // The demo catalog has one retired model.
    expect(result.retiredModels).toBe(1)
  })
})
