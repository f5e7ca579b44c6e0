import { describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { parse } from 'yaml'
import { errorCatalog } from '../../shared/errors'
import { gatewayVariables } from './config-variables'

const repoDir = new URL('../..', import.meta.url).pathname
const compose = parse(await Bun.file(`${repoDir}compose.yaml`).text(), { merge: true })
const haproxyConfig = await Bun.file(`${repoDir}deploy/haproxy/haproxy.cfg`).text()
const services: Record<string, any> = compose.services
const gateways = Object.entries(services).filter(([, service]) => service.build !== undefined)
const balancer = services['load-balancer']
// The port the image's gateway listens on (ENV PORT of the Dockerfile).
const gatewayPort = /\bPORT=(\d+)/.exec(await Bun.file(`${repoDir}Dockerfile`).text())![1]
/** `${VAR:-default}` as compose fills it in when VAR is unset. */
const withDefaults = (value: string) => value.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1')

/** The backend servers of haproxy.cfg: name, host and port. */
function haproxyServers(): Array<{ name: string; host: string; port: string }> {
  return [...haproxyConfig.matchAll(/^\s*server (\S+) ([^:\s]+):(\d+)/gm)].map(([, name, host, port]) => ({ name: name!, host: host!, port: port! }))
}

describe('compose.yaml', () => {
  test('runs Postgres, Redis, two gateways built from the Dockerfile and a load balancer', () => {
    expect(Object.keys(services).sort()).toEqual(['gateway-1', 'gateway-2', 'load-balancer', 'postgres', 'redis'])
    expect(gateways.map(([name]) => name)).toEqual(['gateway-1', 'gateway-2'])
    expect(existsSync(`${repoDir}${gateways[0]![1].build}/Dockerfile`)).toBe(true)
  })

  test('points every gateway at the Postgres and Redis services, with only variables the gateway reads', async () => {
    const known = await gatewayVariables()
    const postgres = services.postgres.environment

    for (const [, gateway] of gateways) {
      const database = new URL(withDefaults(gateway.environment.DATABASE_URL))
      const redis = new URL(gateway.environment.REDIS_URL)

      expect(Object.keys(gateway.environment).filter((name) => !known.has(name))).toEqual([])
      expect({ host: database.hostname, user: database.username, password: database.password, database: database.pathname.slice(1) }).toEqual({
        host: 'postgres',
        user: postgres.POSTGRES_USER,
        password: withDefaults(postgres.POSTGRES_PASSWORD),
        database: postgres.POSTGRES_DB,
      })
      expect(redis.hostname).toBe('redis')
      expect(gateway.depends_on).toEqual({ postgres: { condition: 'service_healthy' }, redis: { condition: 'service_healthy' } })
    }
  })

  test('trusts X-Forwarded-For from the load balancer alone, at its fixed address on the network', () => {
    const [network, settings] = Object.entries(balancer.networks as Record<string, { ipv4_address: string }>)[0]!
    const subnet = compose.networks[network].ipam.config[0].subnet as string
    const prefix = subnet.split('.').slice(0, 3).join('.')

    for (const [, gateway] of gateways) {
      expect(gateway.environment.TRUSTED_PROXIES).toBe(settings.ipv4_address)
      expect(gateway.networks).toEqual([network])
    }
    expect(settings.ipv4_address.startsWith(`${prefix}.`)).toBe(true)
    expect(subnet.endsWith('/24')).toBe(true)
    expect(haproxyConfig).toMatch(/^\s*option forwardfor\b/m)
  })

  test('checks the health of Postgres, Redis and the gateways, and starts each only after what it needs is healthy', () => {
    for (const name of ['postgres', 'redis', 'gateway-1', 'gateway-2']) {
      expect(services[name].healthcheck?.test?.[0]).toBe('CMD')
    }
    for (const [name, service] of Object.entries(services)) {
      for (const [needed, { condition }] of Object.entries((service.depends_on ?? {}) as Record<string, { condition: string }>)) {
        expect({ name, needed, condition, checked: services[needed]?.healthcheck !== undefined }).toEqual({ name, needed, condition: 'service_healthy', checked: true })
      }
    }
    expect(services.redis.command).toContain('noeviction')
  })

  test('balances over every gateway on the port it listens on, sending traffic only to those that are ready', () => {
    expect(haproxyServers()).toEqual(gateways.map(([name]) => ({ name, host: name, port: gatewayPort })))
    expect(haproxyConfig).toMatch(/^\s*http-check send meth GET uri \/readyz$/m)
    expect(balancer.ports).toEqual([`${gatewayPort}:${/^\s*bind :(\d+)$/m.exec(haproxyConfig)![1]}`])
    expect(balancer.depends_on).toEqual(Object.fromEntries(gateways.map(([name]) => [name, { condition: 'service_healthy' }])))
  })

  test("mounts the load balancer's configuration, whose error pages are OpenAI error envelopes", async () => {
    const [source, target] = (balancer.volumes[0] as string).split(':')
    const errorFiles = [...haproxyConfig.matchAll(/^\s*errorfile (\d+) (\S+)$/gm)]

    expect(existsSync(`${repoDir}${source}/haproxy.cfg`)).toBe(true)
    expect(errorFiles.length).toBeGreaterThan(0)
    for (const [, status, path] of errorFiles) {
      const text = await Bun.file(`${repoDir}${source}/${path!.slice(target!.length + 1)}`).text()
      const [head, body] = text.split('\r\n\r\n')
      const envelope = JSON.parse(body!)

      expect(head!.split('\r\n')[0]).toStartWith(`HTTP/1.1 ${status} `)
      expect(head).toContain(`Content-Length: ${Buffer.byteLength(body!)}`)
      expect(Object.keys(envelope.error)).toEqual(['type', 'message', 'code', 'param'])
      expect(envelope.error.type).toBe(errorCatalog[envelope.error.code as keyof typeof errorCatalog].type)
    }
  })
})

describe('deploy/haproxy/haproxy.cfg', () => {
  const haproxy = Bun.which('haproxy')

  test.skipIf(!haproxy)('is a configuration haproxy accepts', async () => {
    const dir = `${repoDir}deploy/haproxy`
    const local = `${Bun.env.TMPDIR ?? '/tmp'}/nilegate-haproxy-${process.pid}.cfg`
    await Bun.write(local, haproxyConfig.replaceAll('/usr/local/etc/haproxy', dir))

    const check = Bun.spawnSync([haproxy!, '-c', '-f', local])

    expect({ code: check.exitCode, output: check.stdout.toString() }).toEqual({ code: 0, output: expect.stringContaining('Configuration file is valid') })
  })
})
