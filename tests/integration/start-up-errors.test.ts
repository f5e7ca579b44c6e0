import { afterAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import { createTempDir } from '../support/databases'
import { childEnv, runBun } from '../support/processes'
import { closedPort } from '../support/tcp-proxy'

const temp = createTempDir('start-up')
afterAll(() => temp.remove())

test('a bad setting or an unreachable database stops start-up with one line naming the step and why, and exit code 1', async () => {
  const taken = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('taken') })
  const badCatalog = join(temp.path, 'catalog.json')
  await Bun.write(badCatalog, '{"models": [')
  const nothingListens = closedPort()
  const cases: [Record<string, string>, string][] = [
    [{ PORT: 'eighty' }, 'nilegate did not start: reading the environment: bad environment: PORT Expected integer'],
    [{ NILEGATE_CONFIG: badCatalog }, `nilegate did not start: reading the catalog: ${badCatalog}: JSON Parse error`],
    [{ DATABASE_URL: `postgres://nobody@127.0.0.1:${nothingListens}/nilegate` }, `nilegate did not start: opening the Postgres database of DATABASE_URL: connect ECONNREFUSED 127.0.0.1:${nothingListens}`],
    [{ TRUSTED_PROXIES: '10.0.0.0/8,proxy.internal' }, 'nilegate did not start: reading TRUSTED_PROXIES: not an IP address or CIDR: "proxy.internal"'],
    [{ HOST: '999.1.1.1' }, 'nilegate did not start: listening on 999.1.1.1 port 0: HOST 999.1.1.1 is not an address of this machine, nor a name of one'],
    [{ HOST: '127.0.0.1', PORT: String(taken.port) }, `nilegate did not start: listening on 127.0.0.1 port ${taken.port}: port ${taken.port} is in use by another process`],
  ]

  const runs = await Promise.all(cases.map(([env], index) => runBun(['server/main.ts'], childEnv({ DATA_DIR: join(temp.path, `data-${index}`), PORT: '0', ...env })))).finally(() => taken.stop(true))

  for (const [index, run] of runs.entries()) {
    const lines = run.stderr.split('\n').filter(Boolean)
    expect([run.code, lines.at(-1)?.slice(0, cases[index]![1].length)]).toEqual([1, cases[index]![1]])
    expect(run.stderr).not.toContain('    at ')
  }
})
