import { describe, expect, test } from 'bun:test'
import { gatewayVariables } from './config-variables'
import { createTempDir } from '../support/databases'

const repoDir = new URL('../..', import.meta.url).pathname
const unit = await Bun.file(`${repoDir}deploy/nilegate.service`).text()

/** The unit's settings as section -> key -> values (a key may repeat). */
function settings(): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>()
  let section = new Map<string, string[]>()
  for (const line of unit.split('\n').map((text) => text.trim())) {
    if (line === '' || line.startsWith('#')) continue
    const header = /^\[(\w+)\]$/.exec(line)
    if (header) sections.set(header[1]!, (section = new Map()))
    else {
      const [key, ...value] = line.split('=')
      section.set(key!, [...(section.get(key!) ?? []), value.join('=')])
    }
  }
  return sections
}

describe('deploy/nilegate.service', () => {
  const service = settings().get('Service')!

  test('runs the gateway with Bun from the installed repository, as an unprivileged user', () => {
    const [executable, ...args] = service.get('ExecStart')![0]!.split(' ')

    expect(executable).toEndWith('/bun')
    expect(args).toEqual(['server/main.ts'])
    expect(service.get('User')).toHaveLength(1)
    expect(['root', '0']).not.toContain(service.get('User')![0]!)
    expect(service.get('WorkingDirectory')).toEqual(['/opt/nilegate'])
  })

  test('reloads the catalog on reload, stops with SIGTERM and gives in-flight requests their time', () => {
    expect(service.get('ExecReload')).toEqual(['/bin/kill -HUP $MAINPID'])
    expect(service.get('KillSignal')).toEqual(['SIGTERM'])
    // The longest request a deployment allows by default is 10 minutes.
    expect(service.get('TimeoutStopSec')![0]).toMatch(/^(1[0-9]|[2-9][0-9])min$/)
  })

  test('sets only variables the gateway reads, and keeps DATA_DIR in its state directory', async () => {
    const known = await gatewayVariables()
    const variables = Object.fromEntries(service.get('Environment')!.flatMap((line) => line.split(' ')).map((pair) => pair.split('=') as [string, string]))

    expect(Object.keys(variables).filter((name) => !known.has(name))).toEqual([])
    expect(variables.DATA_DIR).toBe(`/var/lib/${service.get('StateDirectory')![0]}`)
  })

  test.skipIf(!Bun.which('systemd-analyze'))('passes systemd-analyze verify', async () => {
    const dir = createTempDir('systemd-unit')
    try {
      // The unit names /usr/local/bin/bun, where the install puts it; verify checks the executable exists.
      const path = `${dir.path}/nilegate.service`
      await Bun.write(path, unit.replace(/^ExecStart=\S+/m, `ExecStart=${process.execPath}`))

      const verify = Bun.spawnSync(['systemd-analyze', 'verify', path])

      expect({ code: verify.exitCode, problems: verify.stderr.toString() }).toEqual({ code: 0, problems: '' })
    } finally {
      dir.remove()
    }
  })
})
