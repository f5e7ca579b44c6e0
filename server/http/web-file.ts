/** One file the gateway serves from memory: as it is and, when that is smaller, gzipped. */
export interface WebFile {
  readonly body: Uint8Array<ArrayBuffer>
  readonly gzipped: Uint8Array<ArrayBuffer> | null
  readonly type: string
  /** A strong validator of `body`; the gzipped form's has `-gzip` before the closing quote. */
  readonly etag: string
}

/** Types worth gzipping; images and fonts come compressed already. */
const compressible = /^(text\/|application\/(javascript|json|manifest\+json)|image\/svg\+xml)/

/** `body` of content type `type`, gzipped once now rather than on every request. */
export function webFile(body: Uint8Array<ArrayBuffer>, type: string): WebFile {
  const gzipped = compressible.test(type) ? Bun.gzipSync(body, { level: 9 }) : null
  return {
    body,
    gzipped: gzipped !== null && gzipped.byteLength < body.byteLength ? gzipped : null,
    type,
    etag: `"${Bun.hash(body).toString(36)}"`,
  }
}

/** Whether an Accept-Encoding header takes gzip: named, or `*`, without `q=0`. */
export function acceptsGzip(acceptEncoding: string | null): boolean {
  if (acceptEncoding === null) return false
  let star = false
  for (const item of acceptEncoding.split(',')) {
    const [coding = '', ...parameters] = item.split(';').map((part) => part.trim().toLowerCase())
    const refused = parameters.some((parameter) => /^q=0(\.0{0,3})?$/.test(parameter))
    if (coding === 'gzip' || coding === 'x-gzip') return !refused
    if (coding === '*') star = !refused
  }
  return star
}

/** Whether an If-None-Match header names `etag` (weakly compared, as RFC 9110 asks for GET). */
function isCurrent(ifNoneMatch: string | null, etag: string): boolean {
  if (ifNoneMatch === null) return false
  return ifNoneMatch.split(',').some((tag) => {
    const trimmed = tag.trim()
    return trimmed === '*' || trimmed.replace(/^W\//, '') === etag
  })
}

/**
 * The answer to a GET (or HEAD) of `file`: gzipped when the client takes it, 304 when its copy
 * is current, with `headers` (caching, security) beside the file's own.
 */
export function fileResponse(file: WebFile, request: Request, headers: Readonly<Record<string, string>>): Response {
  const gzip = file.gzipped !== null && acceptsGzip(request.headers.get('accept-encoding'))
  const etag = gzip ? `${file.etag.slice(0, -1)}-gzip"` : file.etag
  const sent: Record<string, string> = { ...headers, 'content-type': file.type, etag }
  if (file.gzipped !== null) sent.vary = 'Accept-Encoding'
  if (gzip) sent['content-encoding'] = 'gzip'
  if (isCurrent(request.headers.get('if-none-match'), etag)) return new Response(null, { status: 304, headers: sent })
  return new Response(gzip ? file.gzipped : file.body, { headers: sent })
}
