/**
 * Seconds postgres.js waits before reconnecting after `retries` failed connections in a row. Its
 * default grows to 10-20 s after a few failures, so a gateway came back up to 20 s after its
 * database did, answering 503 meanwhile; this one stops growing at 0.5-1 s.
 */
export function reconnectBackoffS(retries: number): number {
  return (0.5 + Math.random() / 2) * Math.min(3 ** retries / 100, 1)
}
