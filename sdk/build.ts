/**
 * Builds the published package into dist/: `index.js`, ESM for Node 20+, Bun and browsers, whose
 * dependencies stay imports while the shared error catalog is inlined; and `index.d.ts`, the
 * client's declarations rolled up with the gateway's `App` type and the shared schemas, so the
 * package carries the types of the very server it was built from. Run: `bun run --cwd sdk build`.
 */
import { rm } from 'node:fs/promises'
import { rollup } from 'rollup'
import { dts } from 'rollup-plugin-dts'
import manifest from './package.json'

const sdkDir = import.meta.dir
const distDir = `${sdkDir}/dist`
const declarationsDir = `${distDir}/declarations`
const dependencies = Object.keys(manifest.dependencies)
const isDependency = (id: string) => dependencies.some((name) => id === name || id.startsWith(`${name}/`))

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
const bundle = await rollup({
  input: `${declarationsDir}/sdk/src/index.d.ts`,
  external: isDependency,
  plugins: [sharedDeclarations, dts()],
  onwarn: (warning) => {
    throw new Error(`rolling up the declarations: ${warning.message}`)
  },
})
await bundle.write({ file: `${distDir}/index.d.ts`, format: 'es' })
await bundle.close()
await rm(declarationsDir, { recursive: true })
