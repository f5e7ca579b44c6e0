// The container's health check: exits 0 when the gateway in this container answers GET /healthz
// with 200 within 2 s, 1 otherwise. `bun deploy/healthcheck.ts [URL]`; the URL defaults to the
// gateway's own port on the loopback address.
const url = process.argv[2] ?? `http://127.0.0.1:${process.env.PORT || 8080}/healthz`

try {
  const response = await fetch(url, { signal: AbortSignal.timeout(2_000) })
  if (!response.ok) {
    console.error(`${url} answered ${response.status}`)
    process.exit(1)
  }
} catch (error) {
  console.error(`${url}: ${error instanceof Error ? error.message : String(error)}`)
  process.exit(1)
}
