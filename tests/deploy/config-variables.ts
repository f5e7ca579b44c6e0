const repoDir = new URL('../..', import.meta.url).pathname

/** Variables the gateway reads that are not in its settings' schema: Bun's own, and the runtime's. */
const readOutsideConfig = ['BUN_CONFIG_MAX_HTTP_REQUESTS', 'NODE_ENV']

/**
 * The environment variables the gateway knows: the keys of the `Env` schema of server/config.ts,
 * read from its source (the schema is the module's own), plus those read outside it.
 */
export async function gatewayVariables(): Promise<Set<string>> {
  const source = await Bun.file(`${repoDir}server/config.ts`).text()
  const body = /const Env = t\.Object\(\{\n([\s\S]*?)\n\}\)/.exec(source)?.[1]
  if (!body) throw new Error('server/config.ts has no `const Env = t.Object({ ... })` to read the variables from')
  const names = [...body.matchAll(/^ {2}([A-Z][A-Z0-9_]*):/gm)].map((match) => match[1]!)
  return new Set([...names, ...readOutsideConfig])
}
