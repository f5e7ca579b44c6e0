/**
 * Stands in for server/adapters/postgres/database-worker.ts in tests of a thread that crashes: it
 * answers `open`, then dies of an uncaught error on the next call, as a fault in PGlite would.
 */
import type { DatabaseWorkerReply, DatabaseWorkerRequest } from '../../server/adapters/postgres/database-worker'

declare var self: Worker

self.onmessage = (event: MessageEvent<DatabaseWorkerRequest>) => {
  const { id, operation } = event.data
  if (operation === 'open') self.postMessage({ id, value: undefined } satisfies DatabaseWorkerReply)
  else
    setTimeout(() => {
      throw new Error('the database thread crashed')
    })
}
