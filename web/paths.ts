/**
 * The dashboard's page paths. The gateway answers a GET of any of them (or anything below a
 * prefix ending in `/`) with the dashboard's page, and the client-side router owns them. Every
 * other path stays the API's: unknown ones answer 404 in the OpenAI error envelope.
 */
export const dashboardPaths = [
  '/',
  '/login',
  '/signup',
  '/verify-email',
  '/forgot-password',
  '/reset-password',
  '/invite',
  '/account',
  '/organizations/new',
  '/members',
  '/projects',
  '/projects/',
  '/keys',
  '/usage',
  '/audit',
  '/models',
  '/models/',
  '/playground',
  '/admin/',
] as const

/** Whether a request path is one of the dashboard's pages. */
export function isDashboardPath(path: string): boolean {
  return dashboardPaths.some((page) => (page.endsWith('/') && page !== '/' ? path.startsWith(page) && path.length > page.length : path === page || path === `${page}/`))
}
