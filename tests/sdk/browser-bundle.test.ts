import { describe, expect, test } from 'bun:test'
import { dirname } from 'node:path'

const repoDir = new URL('../..', import.meta.url).pathname
const manifest: { dependencies: Record<string, string>; peerDependencies?: Record<string, string> } = await Bun.file(`${repoDir}sdk/package.json`).json()
/** The server's libraries: their types may reach the SDK's declarations, their code must not reach its users. */
const serverLibraries = ['elysia', '@sinclair/typebox', '@elysiajs/eden']
/** What a browser downloads of the SDK, gzipped, at most: the dashboard's first screen waits for it. */
const gzipBudgetBytes = 12 * 1024

/** The packages a package installs with it: its dependencies and peer dependencies, transitively. */
async function installedWith(names: string[], from: string, seen = new Set<string>()): Promise<Set<string>> {
  for (const name of names) {
    if (seen.has(name)) continue
    seen.add(name)
    const packageJson = Bun.fileURLToPath(import.meta.resolve(`${name}/package.json`, from))
    const { dependencies = {}, peerDependencies = {} } = await Bun.file(packageJson).json()
    await installedWith([...Object.keys(dependencies), ...Object.keys(peerDependencies)], `${dirname(packageJson)}/`, seen)
  }
  return seen
}

describe('@nilegate/sdk in a browser', () => {
  test('bundles, minified and with nothing left out, to a file with no code of the server libraries, within its size budget', async () => {
    const output = await Bun.build({ entrypoints: [`${repoDir}sdk/src/index.ts`], target: 'browser', format: 'esm', minify: true, metafile: true })

    expect(output.success).toBe(true)
    const inputs = Object.keys(output.metafile!.inputs)
    const fromServerLibraries = inputs.filter((path) => /node_modules\/(elysia|@sinclair\/typebox)\//.test(path) || /(^|\/)server\//.test(path))
    expect(fromServerLibraries).toEqual([])
    // Eden's treaty client is bundled, and it is small and framework-free: the proxy that builds requests.
    expect(inputs.filter((path) => path.includes('node_modules/@elysiajs/eden/')).every((path) => /eden\/dist\/(treaty2|chunk-\w+)\.mjs$/.test(path))).toBe(true)
    const code = await output.outputs[0]!.text()
    expect(code.match(/\bBun\.|["']node:|\brequire\(|\bprocess\.env/g)).toBeNull()
    const gzipBytes = Bun.gzipSync(code).byteLength
    console.info(`@nilegate/sdk for browsers: ${code.length} bytes, ${gzipBytes} gzipped`)
    expect(gzipBytes).toBeLessThan(gzipBudgetBytes)
  })

  test('installs none of the server libraries with the published package', async () => {
    const installed = await installedWith(Object.keys(manifest.dependencies), `${repoDir}sdk/`)

    expect(Object.keys(manifest.dependencies)).toEqual(['eventsource-parser'])
    expect(Object.keys(manifest.peerDependencies ?? {})).toEqual([])
    expect(serverLibraries.filter((name) => installed.has(name))).toEqual([])
  })
})
