import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

// What the gateway loads at start before it reads its configuration: its static imports, followed
// through its own modules. Redis's client, the SMTP client and PGlite cost a process about 9, 3
// and 2 MiB resident, so they are imported only where they are used (main.ts, database.ts).

const transpiler = new Bun.Transpiler({ loader: 'ts' })
const mainPath = join(import.meta.dir, '../../server/main.ts')

/** The packages `entry` loads through static imports, its own modules' and the shared package's included. */
function staticPackages(entry: string): Set<string> {
  const seen = new Set<string>()
  const packages = new Set<string>()
  const visit = (file: string) => {
    // Lua scripts, JSON and the dashboard's files are read as data: they import nothing.
    if (seen.has(file) || !/\.tsx?$/.test(file)) return
    seen.add(file)
    for (const { path, kind } of transpiler.scanImports(readFileSync(file, 'utf8'))) {
      if (kind !== 'import-statement' && kind !== 'require-call') continue
      if (path.startsWith('.') || path.startsWith('@nilegate/')) visit(Bun.resolveSync(path, dirname(file)))
      else packages.add(path.startsWith('@') ? path.split('/').slice(0, 2).join('/') : path.split('/')[0]!)
    }
  }
  visit(entry)
  return packages
}

test('the gateway loads the Redis and SMTP clients and PGlite only where they are used', () => {
  const packages = staticPackages(mainPath)
  // The walk reaches the packages it should, so an empty answer cannot pass.
  expect(packages).toContain('elysia')
  expect(packages).toContain('postgres')
  expect([...packages].filter((name) => ['redis', 'nodemailer', '@electric-sql/pglite'].includes(name))).toEqual([])
})
