import { expect, test } from 'bun:test'
import { gatewayVariables } from '../deploy/config-variables'

const repoDir = new URL('../..', import.meta.url).pathname

/** The variables named in the first column of the README's configuration table. */
async function documentedVariables(): Promise<Set<string>> {
  const readme = await Bun.file(`${repoDir}README.md`).text()
  const section = /^## Configuration\n([\s\S]*?)^## /m.exec(readme)?.[1] ?? ''
  const firstCells = [...section.matchAll(/^\| ([^|]+) \|/gm)].map((match) => match[1]!)
  return new Set(firstCells.flatMap((cell) => [...cell.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((match) => match[1]!)))
}

test("the README's configuration table names every variable of server/config.ts, and none it does not read", async () => {
  const documented = await documentedVariables()
  const read = await gatewayVariables()

  expect([...read].filter((name) => !documented.has(name) && name !== 'NODE_ENV')).toEqual([])
  expect([...documented].filter((name) => !read.has(name))).toEqual([])
})
