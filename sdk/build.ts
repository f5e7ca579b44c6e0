/**
 * Builds the published package into dist/: `index.js`, ESM for Node 20+, Bun and browsers, with
 * everything it runs bundled in (the shared error catalog, Eden's treaty client) but its one
 * dependency, eventsource-parser; and `index.d.ts`, the client's declarations rolled up with the
 * gateway's `App` type, the shared schemas and the Elysia, Eden and TypeBox types they are made
 * of, so the package carries the types of the very server it was built from while a consumer
 * installs none of the server's code. Run: `bun run --cwd sdk build`.
 */
import { rm } from 'node:fs/promises'
import { builtinModules } from 'node:module'
import { rollup } from 'rollup'
import { dts } from 'rollup-plugin-dts'
import manifest from './package.json'

const sdkDir = import.meta.dir
const distDir = `${sdkDir}/dist`
const declarationsDir = `${distDir}/declarations`
const dependencies = Object.keys(manifest.dependencies)
const isDependency = (id: string) => dependencies.some((name) => id === name || id.startsWith(`${name}/`))
// Modules of the platforms the server's types mention (its listener, its file reads), not the
// client's: they stay imports, which a consumer's own platform types resolve or `skipLibCheck` passes.
const isPlatformModule = (id: string) => id === 'bun' || id.startsWith('node:') || builtinModules.includes(id.split('/')[0]!)
// The server's logging and metrics libraries reach the declarations only through the app's options,
// which no SDK type uses; their declarations (namespaces rollup cannot merge) stay imports.
const isServerOnly = (id: string) => id === 'pino' || id === 'prom-client'

await rm(distDir, { recursive: true, force: true })

const js = await Bun.build({ entrypoints: [`${sdkDir}/src/index.ts`], outdir: distDir, target: 'browser', format: 'esm', external: dependencies })
if (!js.success) throw new AggregateError(js.logs, 'bundling the JavaScript failed')

// tsc emits declarations for the SDK and everything its types reach: the server's http layer and shared/.
const tsc = Bun.spawnSync(
  [process.execPath, Bun.fileURLToPath(import.meta.resolve('typescript/bin/tsc')), '-p', `${sdkDir}/tsconfig.json`, '--noEmit', 'false', '--declaration', '--emitDeclarationOnly', '--rootDir', `${sdkDir}/..`, '--outDir', declarationsDir],
  { stdout: 'inherit', stderr: 'inherit' },
)
if (tsc.exitCode !== 0) throw new Error(`tsc failed with exit code ${tsc.exitCode}`)

// One declaration file with only what the public API reaches; `@nilegate/shared` is inlined, not a dependency.
const sharedPrefix = '@nilegate/shared/'
const sharedDeclarations = {
  name: 'shared-declarations',
  resolveId: (id: string) => (id.startsWith(sharedPrefix) ? `${declarationsDir}/shared/${id.slice(sharedPrefix.length)}.d.ts` : null),
}
// The declarations of a package subpath its `exports` map names (rollup-plugin-dts reads `types` of the root only).
const subpathDeclarations = {
  name: 'subpath-declarations',
  resolveId: (id: string) => (id === '@elysiajs/eden/treaty2' ? Bun.fileURLToPath(import.meta.resolve('@elysiajs/eden/treaty2').replace(/\/treaty2\.m?js$/, '/treaty2/index.d.ts')) : null),
}
const bundle = await rollup({
  input: `${declarationsDir}/sdk/src/index.d.ts`,
  external: (id) => isDependency(id) || isPlatformModule(id) || isServerOnly(id),
  // respectExternal: the server's libraries' declarations are inlined too, not left as imports.
  plugins: [sharedDeclarations, subpathDeclarations, dts({ respectExternal: true })],
  onwarn: (warning) => {
    throw new Error(`rolling up the declarations: ${warning.message}`)
  },
})
await bundle.write({ file: `${distDir}/index.d.ts`, format: 'es' })
await bundle.close()
await rm(declarationsDir, { recursive: true })
