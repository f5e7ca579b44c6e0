import { describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { gatewayVariables } from './config-variables'
import { dockerfileInstructions, execForm, splitFlags, type Instruction } from './dockerfile-instructions'

const repoDir = new URL('../..', import.meta.url).pathname
const instructions = dockerfileInstructions(await Bun.file(`${repoDir}Dockerfile`).text())
const packageJson = await Bun.file(`${repoDir}package.json`).json()
const pinnedBun = String(packageJson.packageManager).replace(/^bun@/, '')
const finalStage = instructions.at(-1)!.stage
const inFinalStage = (keyword: string) => instructions.filter((instruction) => instruction.stage === finalStage && instruction.keyword === keyword)
const only = (keyword: string): Instruction => {
  const found = inFinalStage(keyword)
  expect(found.map(({ keyword }) => keyword)).toEqual([keyword])
  return found[0]!
}

/** `ENV a=1 b=2` (and the older `ENV a 1`) of the final stage, as a map. */
function finalEnv(): Map<string, string> {
  const env = new Map<string, string>()
  for (const { args } of inFinalStage('ENV')) {
    const pairs = [...args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S+)/g)]
    if (pairs.length === 0) {
      const [name = '', ...value] = args.split(' ')
      env.set(name, value.join(' '))
    }
    for (const [, name, value] of pairs) env.set(name!, value!.replace(/^"|"$/g, ''))
  }
  return env
}

/** Whether a path of the build context is left out by .dockerignore (its patterns, no exceptions). */
async function isIgnored(path: string): Promise<boolean> {
  const patterns = (await Bun.file(`${repoDir}.dockerignore`).text())
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
  if (patterns.some((pattern) => pattern.startsWith('!'))) throw new Error('.dockerignore exceptions (!) are not read by this test')
  const parts = path.split('/')
  const pathAndAncestors = parts.map((_, index) => parts.slice(0, index + 1).join('/'))
  return patterns.some((pattern) => pathAndAncestors.some((candidate) => new Bun.Glob(pattern.replace(/^\/|\/$/g, '')).match(candidate)))
}

describe('Dockerfile', () => {
  test('builds in stages, every one from the Bun that package.json pins', () => {
    const stages = instructions.filter(({ keyword }) => keyword === 'FROM').map(({ args }) => /^(\S+) AS (\S+)$/i.exec(args))

    expect(stages.length).toBeGreaterThanOrEqual(2)
    for (const stage of stages) {
      expect(stage).not.toBeNull()
      expect(stage![1]).toMatch(new RegExp(`^oven/bun:${pinnedBun.replaceAll('.', '\\.')}(-[a-z]+)?$`))
    }
  })

  test('installs the production dependencies from the lockfile as it is, and takes only them into the final stage', () => {
    const installs = instructions.filter(({ keyword, args }) => keyword === 'RUN' && /\bbun install\b/.test(args))
    const copiedModules = inFinalStage('COPY').filter(({ args }) => /\bnode_modules\b/.test(args))

    expect(installs.map(({ args }) => args)).toEqual(['bun install --frozen-lockfile --production'])
    expect(installs[0]!.stage).not.toBe(finalStage)
    expect(copiedModules.map(({ args }) => splitFlags(args).flags.from)).toEqual([installs[0]!.stage])
  })

  test('runs as a user other than root', () => {
    const users = inFinalStage('USER')
    const lastUser = users.at(-1)?.args.split(':')[0]
    const command = only('CMD')

    expect(lastUser).toBeDefined()
    expect(['root', '0']).not.toContain(lastUser!)
    expect(users.at(-1)!.line).toBeLessThan(command.line)
  })

  test('checks its health with a script that exists, on the port it exposes, and starts the gateway itself', () => {
    const healthcheck = splitFlags(only('HEALTHCHECK').args)
    const probe = execForm(healthcheck.rest.replace(/^CMD /, ''))
    const command = execForm(only('CMD').args)
    const env = finalEnv()

    expect(healthcheck.rest).toStartWith('CMD ')
    expect(probe?.[0]).toBe('bun')
    expect(existsSync(`${repoDir}${probe![1]}`)).toBe(true)
    expect(Object.keys(healthcheck.flags).sort()).toEqual(['interval', 'retries', 'start-period', 'timeout'])
    expect(only('EXPOSE').args).toBe(env.get('PORT')!)
    // Bun as process 1 gets SIGTERM and SIGHUP itself; a script runner between would have to pass them on.
    expect(command).toEqual(['bun', 'server/main.ts'])
    expect(env.get('HOST')).toBe('0.0.0.0')
  })

  test('keeps the embedded database in a volume at DATA_DIR', () => {
    expect(execForm(only('VOLUME').args) ?? only('VOLUME').args.split(' ')).toEqual([finalEnv().get('DATA_DIR')!])
  })

  test('sets only variables the gateway reads', async () => {
    const known = await gatewayVariables()

    expect([...finalEnv().keys()].filter((name) => !known.has(name))).toEqual([])
  })

  test('copies files that exist and that .dockerignore lets into the build context', async () => {
    const sources = instructions
      .filter(({ keyword, args }) => keyword === 'COPY' && !splitFlags(args).flags.from)
      .flatMap(({ args }) => splitFlags(args).rest.split(' ').slice(0, -1))

    expect(sources.length).toBeGreaterThan(0)
    for (const source of sources) {
      expect({ source, exists: existsSync(`${repoDir}${source}`), ignored: await isIgnored(source) }).toEqual({ source, exists: true, ignored: false })
    }
  })
})
