import { afterAll, beforeAll, describe } from 'bun:test'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import postgres from 'postgres'
import { openDatabase, type Database } from '../../server/adapters/postgres/database'
import { randomBase62 } from '../../server/core/api-keys'

/** The two databases every repository suite runs against. */
export const databaseKinds = ['pglite', 'postgres'] as const
export type DatabaseKind = (typeof databaseKinds)[number]

/** For hooks and tests that open databases or spawn processes (bun's default is 5 s). */
export const slowHookTimeoutMs = 60_000

// The server the suites create their scratch databases on, through a database they only connect to.
const maintenanceUrl = Bun.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

/** Where the test Postgres listens, for a proxy in front of it. */
export function postgresAddress(): { hostname: string; port: number } {
  const { hostname, port } = new URL(maintenanceUrl)
  return { hostname: hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1', port: Number(port || 5432) }
}

/** A temporary directory, removed by the returned function. */
export function createTempDir(label: string): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), `nilegate-${label}-`))
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) }
}

/** A freshly created, uniquely named database on the test Postgres; `drop()` removes it, and only it. */
export async function createPostgresDatabase(): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const name = `nilegate_test_${randomBase62(12).toLowerCase()}`
  await withMaintenanceConnection((sql) => sql.unsafe(`create database "${name}"`))
  const url = new URL(maintenanceUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    name,
    drop: () => withMaintenanceConnection((sql) => sql.unsafe(`drop database if exists "${name}" with (force)`)).then(() => {}),
  }
}

async function withMaintenanceConnection<T>(run: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const sql = postgres(maintenanceUrl, { max: 1, onnotice: () => {} })
  try {
    return await run(sql)
  } finally {
    await sql.end({ timeout: 5 })
  }
}

/** A directory tree held in memory: directories first, then files with their bytes. */
type DirectoryImage = { directories: string[]; files: { path: string; bytes: Uint8Array }[] }

let migratedPglite: Promise<DirectoryImage> | null = null

/**
 * The files of a closed, migrated PGlite, made once per test run and kept in memory (so nothing is
 * left on disk): writing them out takes a fraction of the seconds that creating a PGlite takes.
 */
function migratedPgliteImage(): Promise<DirectoryImage> {
  migratedPglite ??= (async () => {
    const temp = createTempDir('pglite-image')
    try {
      const db = await openDatabase({ databaseUrl: null, dataDir: temp.path })
      await db.close()
      return readDirectoryImage(join(temp.path, 'pglite'))
    } finally {
      temp.remove()
    }
  })()
  return migratedPglite
}

function readDirectoryImage(root: string): DirectoryImage {
  const image: DirectoryImage = { directories: [], files: [] }
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    const path = relative(root, join(entry.parentPath, entry.name))
    if (entry.isDirectory()) image.directories.push(path)
    else image.files.push({ path, bytes: readFileSync(join(root, path)) })
  }
  return image
}

function writeDirectoryImage(image: DirectoryImage, root: string): void {
  mkdirSync(root, { recursive: true, mode: 0o700 })
  for (const directory of image.directories) mkdirSync(join(root, directory), { recursive: true, mode: 0o700 })
  for (const file of image.files) writeFileSync(join(root, file.path), file.bytes, { mode: 0o600 })
}

/** A temporary data directory holding a migrated, closed PGlite in `pglite/`, as `openDatabase` leaves one. */
export async function createMigratedPgliteDir(): Promise<{ path: string; remove(): void }> {
  const dataDir = createTempDir('pglite')
  writeDirectoryImage(await migratedPgliteImage(), join(dataDir.path, 'pglite'))
  return dataDir
}

/** A migrated database of the given kind, and how to get rid of it. */
export interface TestDatabase {
  kind: DatabaseKind
  db: Database
  /** Postgres URL, or null for PGlite. */
  databaseUrl: string | null
  /** Where PGlite lives (also set for Postgres, as an empty temp dir). */
  dataDir: string
  dispose(): Promise<void>
}

export async function openTestDatabase(kind: DatabaseKind): Promise<TestDatabase> {
  const dataDir = kind === 'pglite' ? await createMigratedPgliteDir() : createTempDir(kind)
  const server = kind === 'postgres' ? await createPostgresDatabase() : null
  const databaseUrl = server?.url ?? null
  const db = await openDatabase({ databaseUrl, dataDir: dataDir.path })
  return {
    kind,
    db,
    databaseUrl,
    dataDir: dataDir.path,
    async dispose() {
      await db.close()
      await server?.drop()
      dataDir.remove()
    },
  }
}

/**
 * Runs `suite` once per database kind, each with one database shared by the file's tests
 * (a fresh PGlite takes seconds to open). Read `context.current` inside tests, not at definition.
 */
export function describeEachDatabase(name: string, suite: (context: { readonly current: TestDatabase; kind: DatabaseKind }) => void): void {
  for (const kind of databaseKinds) {
    describe(`${name} [${kind}]`, () => {
      let opened: TestDatabase | undefined
      const context = {
        kind,
        get current(): TestDatabase {
          if (!opened) throw new Error(`the ${kind} test database is not open yet`)
          return opened
        },
      }
      // Bun ignores bunfig's test timeout for hooks; a fresh PGlite alone can take several seconds.
      beforeAll(async () => {
        opened = await openTestDatabase(kind)
      }, slowHookTimeoutMs)
      afterAll(async () => {
        await opened?.dispose()
      }, slowHookTimeoutMs)
      suite(context)
    })
  }
}
