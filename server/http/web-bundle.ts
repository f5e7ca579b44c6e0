import { fileURLToPath } from 'node:url'
import { webFile, type WebFile } from './web-file'

/** The dashboard's page, whose script and stylesheet Bun's bundler follows. */
export const webEntry = fileURLToPath(new URL('../../web/index.html', import.meta.url))

/** Where the page finds its scripts, stylesheets and files. */
export const webAssetsPath = '/assets/'

/** The built dashboard: its page and its assets by file name (`index-1a2b3c4d.js`). */
export interface WebBuild {
  readonly page: WebFile
  readonly assets: ReadonlyMap<string, WebFile>
}

/** What the bundle builds with: `Bun.build`, or a stand-in in tests. */
export type Bundler = (config: Bun.BuildConfig) => Promise<Bun.BuildOutput>

/**
 * Builds the dashboard in memory: minified, each lazily loaded screen its own chunk, every file
 * but the page named by its content's hash, so that it may be cached for good.
 */
export async function buildWeb(entry: string = webEntry, bundle: Bundler = Bun.build): Promise<WebBuild> {
  const output = await bundle({
    entrypoints: [entry],
    target: 'browser',
    minify: true,
    splitting: true,
    publicPath: webAssetsPath,
    naming: { entry: '[name]-[hash].[ext]', chunk: '[name]-[hash].[ext]', asset: '[name]-[hash].[ext]' },
    define: { 'process.env.NODE_ENV': '"production"' },
    // Nothing of the gateway's environment may reach a page anyone can load.
    env: 'disable',
    throw: false,
  })
  if (!output.success) throw new AggregateError(output.logs, 'building the dashboard failed')
  let page: WebFile | null = null
  const assets = new Map<string, WebFile>()
  for (const artifact of output.outputs) {
    const name = artifact.path.replace(/^\.\//, '')
    const file = webFile(new Uint8Array(await artifact.arrayBuffer()), artifact.type)
    if (name.endsWith('.html')) page = file
    else assets.set(name, file)
  }
  if (page === null) throw new Error(`building the dashboard gave no page from ${entry}`)
  return { page, assets }
}

/** How long a failed build is answered before the next request may try again. */
export const failedBuildRetryMs = 30_000

/**
 * The dashboard, built on the first request that needs it and kept in memory: the gateway starts
 * without a build step, and an instance that serves only the API never builds it. Requests that
 * arrive during the build wait for that one build. A failed build is logged and answered as such
 * for `failedBuildRetryMs`, then tried again, so that a broken page cannot make every request
 * pay for a build.
 */
export class WebBundle {
  private pending: Promise<WebBuild> | null = null
  private failedAt = 0
  /** Builds started, for tests. */
  builds = 0

  constructor(
    private readonly options: {
      entry?: string
      bundler?: Bundler
      log?: (message: string, error?: unknown) => void
      now?: () => number
    } = {},
  ) {}

  /** The built dashboard; rejects with the build's error while a failed build is remembered. */
  get(): Promise<WebBuild> {
    const now = this.options.now ?? Date.now
    if (this.pending !== null && this.failedAt !== 0 && now() - this.failedAt >= failedBuildRetryMs) this.pending = null
    if (this.pending !== null) return this.pending
    this.builds++
    this.failedAt = 0
    const pending = buildWeb(this.options.entry, this.options.bundler).catch((error: unknown) => {
      this.failedAt = now()
      ;(this.options.log ?? console.error)('building the dashboard failed; its pages answer 503 until a build succeeds', error)
      throw error
    })
    this.pending = pending
    return pending
  }
}
