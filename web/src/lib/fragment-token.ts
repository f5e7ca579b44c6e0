/**
 * The token of a mailed link (`#token=...`), taken out of the address bar at once so that it is
 * neither kept in the history nor shown to anyone looking at the screen. Mailed links carry it in
 * the fragment, which no request sends: it reaches neither server logs nor a Referer.
 */
export function takeFragmentToken(): string | null {
  const token = new URLSearchParams(location.hash.slice(1)).get('token')
  if (location.hash) history.replaceState(history.state, '', location.pathname + location.search)
  return token && token.trim() !== '' ? token.trim() : null
}
