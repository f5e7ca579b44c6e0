import { Elysia } from 'elysia'
import { ElysiaCustomStatusResponse } from 'elysia/error'
import { isErrorCode } from '@nilegate/shared/errors'
import type { RequestObserver } from '../../observability/request-record'

/** The error code of an answer a handler returned with `status(...)` (a 503 of /readyz), or ''. */
function codeOf(answer: ElysiaCustomStatusResponse<number, unknown>): string {
  const code = (answer.response as { error?: { code?: unknown } } | null | undefined)?.error?.code
  return isErrorCode(code) ? code : ''
}

/**
 * Ends the record of each request a route answered (the error handler ends the others): its log
 * line and metrics. A stream that began ends later, with its usage (RequestObserver.streamStarted).
 * Without an observer it adds no hook, so requests pay nothing for it.
 */
export function observeRequests(observer: RequestObserver | null) {
  const plugin = new Elysia({ name: 'request-observation' })
  if (observer === null) return plugin
  return plugin.onAfterHandle({ as: 'global' }, ({ request, route, set, responseValue }) => {
    const record = observer.recordOf(request)
    if (record === undefined) return
    if (responseValue instanceof Response) observer.answered(record, route, responseValue.status, '')
    else if (responseValue instanceof ElysiaCustomStatusResponse) observer.answered(record, route, responseValue.code as number, codeOf(responseValue))
    else observer.answered(record, route, typeof set.status === 'number' ? set.status : 200, '')
  })
}
