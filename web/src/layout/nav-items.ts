import type { OrgAction } from '../lib/session'

/** A link of the side navigation; `needs` hides it from roles that may not use the page. */
export interface NavItem {
  href: string
  label: string
  needs?: OrgAction
}

/** The organization's pages. */
export const customerNav: NavItem[] = [
  { href: '/', label: 'Overview' },
  { href: '/projects', label: 'Projects' },
  { href: '/keys', label: 'API keys' },
  { href: '/usage', label: 'Usage' },
  { href: '/members', label: 'Members' },
  { href: '/audit', label: 'Audit log', needs: 'audit_logs.read' },
  { href: '/models', label: 'Models' },
  { href: '/playground', label: 'Playground' },
]

/** The platform operators' pages. */
export const operatorNav: NavItem[] = [
  { href: '/admin/organizations', label: 'Organizations' },
  { href: '/admin/users', label: 'Users' },
  { href: '/admin/models', label: 'Model retirements' },
  { href: '/admin/deployments', label: 'Deployments' },
]

/** Whether `href` is the page at `path` or a page under it (a project under /projects). */
export function isCurrent(href: string, path: string): boolean {
  return href === '/' ? path === '/' : path === href || path.startsWith(`${href}/`)
}
