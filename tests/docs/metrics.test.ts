import { expect, test } from 'bun:test'

const repoDir = new URL('../..', import.meta.url).pathname

test("docs/operations.md lists every metric the gateway defines, and none it does not", async () => {
  const sources = await Array.fromAsync(new Bun.Glob('server/observability/*.ts').scan({ cwd: repoDir }))
  const defined = new Set<string>()
  for (const source of sources) for (const [, name] of (await Bun.file(`${repoDir}${source}`).text()).matchAll(/'(nilegate_[a-z_]+)'/g)) defined.add(name!)
  const page = await Bun.file(`${repoDir}docs/operations.md`).text()
  const documented = new Set([...page.matchAll(/`(nilegate_[a-z_]+)`/g)].map((match) => match[1]!))

  expect(defined.size).toBeGreaterThan(0)
  expect({ undocumented: [...defined].filter((name) => !documented.has(name)), unknown: [...documented].filter((name) => !defined.has(name)) }).toEqual({ undocumented: [], unknown: [] })
})
