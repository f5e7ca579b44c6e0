// What the image holds is enough to run the gateway: the Dockerfile's steps are replayed into a
// temporary directory (its COPY instructions, and its `bun install` in a directory of their own,
// the lockfile's packages coming from Bun's cache), and the gateway started there serves the API,
// the dashboard and its health check. Docker itself is not needed.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { cpSync, mkdirSync } from 'node:fs'
import { createServer } from 'node:net'
import { basename, join } from 'node:path'
import { childEnv, type Finished } from '../support/processes'
import { createTempDir, slowHookTimeoutMs } from '../support/databases'
import { waitFor } from '../support/wait-for'
import { dockerfileInstructions, execForm, splitFlags, type Instruction } from './dockerfile-instructions'

const repoDir = new URL('../..', import.meta.url).pathname
const instructions = dockerfileInstructions(await Bun.file(`${repoDir}Dockerfile`).text())
const temp = createTempDir('image-contents')
let gateway: ReturnType<typeof Bun.spawn> | null = null
let origin = ''
let appDir = ''
let imageEnv: Record<string, string> = {}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
    server.on('error', reject)
  })
}

/** Replays a stage's WORKDIR, COPY (from the build context, or node_modules from another stage) and ENV into `root`. */
function replayStage(stage: string, root: string, stageRoots: Map<string, string>): { workdir: string; env: Record<string, string>; runs: string[] } {
  let workdir = root
  const env: Record<string, string> = {}
  const runs: string[] = []
  for (const { keyword, args } of instructions.filter((instruction: Instruction) => instruction.stage === stage)) {
    if (keyword === 'WORKDIR') {
      workdir = join(root, args)
      mkdirSync(workdir, { recursive: true })
    } else if (keyword === 'ENV') {
      for (const [, name, value] of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=(\S+)/g)) env[name!] = value!
    } else if (keyword === 'RUN') {
      runs.push(args)
    } else if (keyword === 'COPY') {
      const { flags, rest } = splitFlags(args)
      const paths = rest.split(' ')
      const destination = join(workdir, paths.at(-1)!)
      const sources = paths.slice(0, -1)
      for (const source of sources) {
        const into = paths.at(-1)!.endsWith('/') || sources.length > 1 ? join(destination, basename(source)) : destination
        mkdirSync(join(into, '..'), { recursive: true })
        if (flags.from) cpSync(join(stageRoots.get(flags.from)!, source), into, { recursive: true, verbatimSymlinks: true })
        else cpSync(join(repoDir, source), into, { recursive: true })
      }
    }
  }
  stageRoots.set(stage, root)
  return { workdir, env, runs }
}

async function run(command: string[], cwd: string, env: Record<string, string>): Promise<Finished> {
  const child = Bun.spawn(command, { cwd, env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  return { code, stdout, stderr }
}

beforeAll(async () => {
  const stages = [...new Set(instructions.map(({ stage }) => stage))]
  const stageRoots = new Map<string, string>()
  for (const stage of stages) {
    const root = join(temp.path, stage)
    const replayed = replayStage(stage, root, stageRoots)
    // Only the dependencies' install is replayed; the other RUN steps set up the image's own files.
    for (const command of replayed.runs.filter((args) => args.startsWith('bun install'))) {
      const installed = await run(['bun', ...command.split(' ').slice(1)], replayed.workdir, childEnv())
      if (installed.code !== 0) throw new Error(`${command} failed: ${installed.stderr}`)
    }
    appDir = replayed.workdir
    imageEnv = replayed.env
  }
  const port = await freePort()
  origin = `http://127.0.0.1:${port}`
  gateway = Bun.spawn(execForm(instructions.findLast(({ keyword }) => keyword === 'CMD')!.args)!, {
    cwd: appDir,
    env: childEnv({ ...imageEnv, HOST: '127.0.0.1', PORT: String(port), DATA_DIR: join(temp.path, 'data') }),
    stdin: 'ignore',
    stdout: 'ignore',
    stderr: 'pipe',
  })
  const started = gateway
  const answers = async () => {
    if (started.exitCode !== null) throw new Error(`the gateway exited with ${started.exitCode}: ${await new Response(started.stderr as ReadableStream).text()}`)
    return (await fetch(`${origin}/v1/models`).catch(() => null))?.status === 401
  }
  await waitFor(answers, { timeoutMs: 45_000, what: 'the gateway started from the image files to answer' })
}, slowHookTimeoutMs)

afterAll(async () => {
  gateway?.kill('SIGKILL')
  await gateway?.exited
  temp.remove()
})

describe('the files the Dockerfile puts in the image', () => {
  test('hold no development dependency but those a production one asks for', async () => {
    const modules = join(appDir, 'node_modules')
    const scan = (pattern: string) => Array.fromAsync(new Bun.Glob(pattern).scan({ cwd: modules, onlyFiles: false }))
    const installed = [...(await scan('*')), ...(await scan('@*/*'))].filter((name) => !name.startsWith('.') && !/^@[^/]*$/.test(name))
    const asked = new Set<string>()
    for (const name of installed) {
      const manifest = Bun.file(join(modules, name, 'package.json'))
      if (!(await manifest.exists())) continue
      const { dependencies = {}, peerDependencies = {} } = await manifest.json()
      for (const dependency of [...Object.keys(dependencies), ...Object.keys(peerDependencies)]) asked.add(dependency)
    }
    const { devDependencies } = await Bun.file(`${repoDir}package.json`).json()

    expect(installed).toContain('elysia')
    expect(installed.filter((name) => name in devDependencies && !asked.has(name))).toEqual([])
  })

  test('serve the API, the dashboard (bundled from them on the first page request) and the API reference', async () => {
    const page = await fetch(`${origin}/`)
    const html = await page.text()
    const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((match) => match[1]!)
    const assetStatuses = await Promise.all(assets.map(async (path) => (await fetch(`${origin}${path}`)).status))
    const reference = await fetch(`${origin}/docs`)

    expect(page.status).toBe(200)
    expect(assets.length).toBeGreaterThan(0)
    expect(assetStatuses.every((status) => status === 200)).toBe(true)
    expect(reference.status).toBe(200)
  })

  test("pass the image's health check while the gateway runs, and fail it where nothing listens", async () => {
    const healthcheck = instructions.findLast(({ keyword }) => keyword === 'HEALTHCHECK')!
    const command = execForm(splitFlags(healthcheck.args).rest.replace(/^CMD /, ''))!
    const port = new URL(origin).port

    const healthy = await run(command, appDir, childEnv({ ...imageEnv, PORT: port }))
    const unhealthy = await run(command, appDir, childEnv({ ...imageEnv, PORT: String(await freePort()) }))

    expect({ code: healthy.code, stderr: healthy.stderr }).toEqual({ code: 0, stderr: '' })
    expect(unhealthy.code).toBe(1)
  })
})
