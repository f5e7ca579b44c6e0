/** Where the gateway's mails send people: a page of the dashboard, or a request of the API. */

/**
 * The dashboard page at `path` that spends `token`, for the gateway whose API is at `baseUrl`
 * (`https://api.example.com/v1`). The token travels in the fragment, which browsers send to no
 * server: it reaches neither access logs nor a Referer. Without a base URL, the page's path alone.
 */
export function dashboardLink(baseUrl: string | null, path: string, token: string): string {
  const origin = baseUrl === null ? '' : baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '')
  return `${origin}${path}#token=${token}`
}

/** A request of the API as a mail shows it: the whole curl line under a base URL, else the route and body. */
export function apiRequestLine(baseUrl: string | null, route: string, body: string, headers: readonly string[] = []): string {
  if (baseUrl === null) return `POST /v1${route} with the body ${body}`
  const headerArgs = [...headers, 'Content-Type: application/json'].map((header) => `-H '${header}'`).join(' ')
  return `curl -X POST ${baseUrl.replace(/\/+$/, '')}${route} ${headerArgs} -d '${body}'`
}
