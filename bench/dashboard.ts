/**
 * What the dashboard costs a visitor: the bytes of its first screen (/login for a new visitor),
 * raw and gzipped as the gateway sends them, and how long a headless Chromium takes to show the
 * login form over emulated slow connections. Starts a gateway on the embedded defaults in a
 * temporary directory. Needs Debian's chromium (CHROMIUM_PATH to use another).
 *
 *   bun bench/dashboard.ts [--rounds 5]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type CDPSession } from 'playwright-core'
import { integerArg } from './arg-value'
import { waitForLogLine } from './process-group'

const rounds = integerArg(Bun.argv, 'rounds', 5)
const repoDir = join(import.meta.dir, '..')
const chromiumPath = Bun.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/** Chromium's own presets: throughput in bytes per second each way, and the added round trip. */
const connections = [
  { name: 'unthrottled (loopback)', conditions: null },
  { name: 'Slow 4G (1.6 Mbit/s, 150 ms)', conditions: { latency: 150, downloadThroughput: (1.6 * 1024 * 1024) / 8, uploadThroughput: (750 * 1024) / 8 } },
  { name: '3G (750 kbit/s, 300 ms)', conditions: { latency: 300, downloadThroughput: (750 * 1024) / 8, uploadThroughput: (250 * 1024) / 8 } },
] as const

const workDir = mkdtempSync(join(tmpdir(), 'nilegate-bench-dashboard-'))
const logPath = join(workDir, 'gateway.log')
const gateway = Bun.spawn([process.execPath, 'server/main.ts'], {
  cwd: repoDir,
  env: { ...process.env, PORT: '0', DATA_DIR: join(workDir, 'data'), BUN_CONFIG_MAX_HTTP_REQUESTS: '8192' },
  stdout: Bun.file(logPath),
  stderr: 'inherit',
})
const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] })

try {
  const [, baseUrl] = await waitForLogLine(logPath, /listening on (http:\/\/[^\s]+)\/v1/, gateway, 30_000)
  const origin = baseUrl!

  // The first screen's files: the page and everything it names, fetched as a browser would.
  const page = await fetch(`${origin}/login`, { headers: { 'accept-encoding': 'gzip' } })
  const html = await page.text()
  const files = [{ name: 'login page', url: `${origin}/login` }, ...[...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((match) => ({ name: match[1]!, url: `${origin}${match[1]}` }))]
  const sizes = await Promise.all(
    files.map(async (file) => {
      const raw = (await (await fetch(file.url, { headers: { 'accept-encoding': 'identity' } })).arrayBuffer()).byteLength
      return { ...file, raw, gzip: Bun.gzipSync(new Uint8Array(await (await fetch(file.url)).arrayBuffer()), { level: 9 }).byteLength }
    }),
  )

  const timings: Array<{ name: string; shownMs: number[]; bytes: number[] }> = []
  for (const connection of connections) {
    const row = { name: connection.name, shownMs: [] as number[], bytes: [] as number[] }
    for (let round = 0; round < rounds; round++) {
      // A new context each round: nothing cached, as for a first visit.
      const context = await browser.newContext()
      const tab = await context.newPage()
      const cdp: CDPSession = await context.newCDPSession(tab)
      await cdp.send('Network.enable')
      if (connection.conditions) await cdp.send('Network.emulateNetworkConditions', { offline: false, ...connection.conditions })
      let received = 0
      cdp.on('Network.loadingFinished', (event: { encodedDataLength: number }) => (received += event.encodedDataLength))
      const started = performance.now()
      await tab.goto(`${origin}/login`)
      await tab.getByRole('button', { name: /log in/i }).waitFor({ state: 'visible', timeout: 60_000 })
      row.shownMs.push(performance.now() - started)
      row.bytes.push(received)
      await context.close()
    }
    timings.push(row)
  }

  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
  const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} kB`
  console.log(`\nFirst screen (/login) files, as served:\n`)
  console.log('| file | raw | gzip |\n| --- | ---: | ---: |')
  for (const file of sizes) console.log(`| ${file.name} | ${kb(file.raw)} | ${kb(file.gzip)} |`)
  console.log(`| all | ${kb(sizes.reduce((sum, file) => sum + file.raw, 0))} | ${kb(sizes.reduce((sum, file) => sum + file.gzip, 0))} |`)
  console.log(`\nLogin form shown, first visit, median of ${rounds} (headless Chromium, network emulated):\n`)
  console.log('| connection | shown after | bytes over the wire |\n| --- | ---: | ---: |')
  for (const row of timings) console.log(`| ${row.name} | ${Math.round(median(row.shownMs))} ms | ${kb(median(row.bytes))} |`)
} finally {
  await browser.close()
  gateway.kill()
  await gateway.exited
  rmSync(workDir, { recursive: true, force: true })
}
