import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { errorCatalog, type ErrorCode } from '@nilegate/shared/errors'
import { orNull } from './fields'

const codes = Object.keys(errorCatalog) as ErrorCode[]
const types = [...new Set(Object.values(errorCatalog).map((spec) => spec.type))]

/** The OpenAI error envelope; `code` is one of the catalog's. */
export const ErrorResponse = t.Object({
  error: t.Object({
    type: t.String({ enum: types }),
    message: t.String(),
    code: Type.Unsafe<ErrorCode>({ type: 'string', enum: codes }),
    param: orNull(t.String({ description: 'The request field at fault, like `messages[2].role`.' })),
    request_id: t.Optional(t.String({ description: 'The request id, on 413 answers (whose body a client may not have finished sending).' })),
  }),
  request_id: t.Optional(t.String({ description: 'The request id, on 413 answers (whose body a client may not have finished sending).' })),
})
