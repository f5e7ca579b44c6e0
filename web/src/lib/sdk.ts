/**
 * The one place the dashboard imports the nilegate SDK from: every API call of the dashboard goes
 * through it. It points at the SDK's sources, which the page's build bundles (no server code: the
 * SDK takes only types from the server).
 */
export { Nilegate, NilegateConnectionError, NilegateError, NilegateTimeoutError } from '../../../sdk/src/index'
export type * from '../../../sdk/src/index'
export type { ListPage, ListParams } from '../../../sdk/src/pagination'
