import { describe, expect, test } from 'bun:test'
import { childEnv, runBun } from '../support/processes'

const serverUrl = 'postgres://postgres@127.0.0.1:5432/postgres'

async function benchDatabases(): Promise<string[]> {
  const sql = new Bun.SQL(serverUrl, { max: 1 })
  try {
    const rows = await sql`SELECT datname FROM pg_database WHERE datname LIKE 'nilegate\_ledger\_bench\_%'`
    return rows.map((row: { datname: string }) => row.datname)
  } finally {
    await sql.close()
  }
}

/** The cells of the table row whose label starts with `label`. */
function cells(table: string, label: string): string[] {
  const line = table.split('\n').find((row) => row.startsWith(`| ${label}`))
  if (!line) throw new Error(`no row '${label}' in:\n${table}`)
  return line.split('|').slice(2, -1).map((cell) => cell.trim())
}

describe('bun bench/ledger.ts', () => {
  test(
    'loads two steps into a scratch database, prints every measure of each, and drops the database',
    async () => {
      const before = await benchDatabases()

      const { code, stdout, stderr } = await runBun(['bench/ledger.ts', '--rows', '20000', '--steps', '10000,20000', '--orgs', '5', '--no-write'], childEnv(), 55_000)

      if (code !== 0) throw new Error(`bench/ledger.ts exited with ${code}:\n${stdout}\n${stderr}`)
      expect(cells(stdout, 'after the step')).toEqual(['10,000 rows', '20,000 rows'])
      const number = /^[\d,]+(\.\d+)?$/
      const milliseconds = /^[\d.]+ ms$/
      const firstAndMedian = /^[\d.]+ \/ [\d.]+ ms$/
      const seconds = /^[\d.]+ s$/
      const expected: [string, RegExp][] = [
        ['load rate', number],
        ['bytes a row', number],
        ['report: 30 days by day, group_by=model', firstAndMedian],
        ['report: 30 days by day, group_by=api_key_id', firstAndMedian],
        ['report: 7 days by hour, group_by=model', firstAndMedian],
        ['balance', firstAndMedian],
        ['rebuild: first request after start (counters rebuilt from the ledger)', milliseconds],
        ['rebuild: next requests', milliseconds],
        ['reconcile into an empty Redis', seconds],
        ['reconcile --dry-run (', seconds],
      ]
      for (const [label, format] of expected) {
        for (const cell of cells(stdout, label)) expect({ label, cell }).toEqual({ label, cell: expect.stringMatching(format) })
      }
      expect(cells(stdout, 'rows in usage_events').map((cell) => Number(cell.replaceAll(',', '')))[0]).toBe(10_000)
      expect(cells(stdout, "measured organization's rows in the last 30 days")[0]).toBe('1,000')
      expect(cells(stdout, 'reconcile --dry-run says')).toEqual(['5 organizations checked: 5 in step.', '5 organizations checked: 5 in step.'])
      const scratch = stderr.match(/scratch database (nilegate_ledger_bench_\w+)/)?.[1]
      expect(scratch).toBeDefined()
      const after = await benchDatabases()
      expect(after).not.toContain(scratch!)
      expect(after.filter((name) => !before.includes(name))).toEqual([])
    },
    60_000,
  )
})
