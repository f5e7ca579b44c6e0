import type { ComponentChildren } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { useLocation } from 'preact-iso'
import { api, reportError, verificationNeeded } from '../lib/api'
import { currentMembership, currentOrganization, me } from '../lib/session'
import { VerifyEmailNotice } from '../ui'
import { OrganizationSwitcher } from './organization-switcher'
import { SideNav } from './side-nav'
import { UserMenu } from './user-menu'

/** Pages that work without an organization. */
const withoutOrganization = ['/organizations/new', '/account', '/admin']

/**
 * The signed-in frame: skip link, top bar (organization, user menu), side navigation (a menu
 * button opens it at phone width) and the page. Pages are rebuilt when the organization changes.
 */
export function AppShell({ children }: { children: ComponentChildren }) {
  const { path } = useLocation()
  const [navOpen, setNavOpen] = useState(false)
  const main = useRef<HTMLElement>(null)
  const firstPath = useRef(path)
  const organization = currentMembership.value

  useEffect(() => {
    setNavOpen(false)
    // After moving to another page, start reading it from its top, as a page load would.
    if (path !== firstPath.current) {
      firstPath.current = path
      main.current?.focus()
    }
  }, [path])

  useEffect(() => {
    if (organization === null) return
    const controller = new AbortController()
    api()
      .organization.retrieve({ signal: controller.signal })
      .then(
        (details) => {
          currentOrganization.value = details
        },
        (error) => {
          if (!controller.signal.aborted) reportError(error)
        },
      )
    return () => controller.abort()
  }, [organization?.id])

  const needsOrganization = organization === null && !withoutOrganization.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))
  const unverified = me.value?.email_verified === false || verificationNeeded.value

  return (
    <div class="app">
      <a href="#main" class="skip-link">
        Skip to content
      </a>
      <header class="top-bar">
        <button type="button" class="menu-button" aria-expanded={navOpen} aria-controls="side-nav" onClick={() => setNavOpen(!navOpen)}>
          Menu
        </button>
        <a href="/" class="brand">
          nilegate
        </a>
        <div class="top-bar-end">
          <OrganizationSwitcher />
          <UserMenu />
        </div>
      </header>
      <div class="layout">
        <SideNav open={navOpen} />
        <main id="main" class="main" tabIndex={-1} ref={main} key={organization?.id ?? 'none'}>
          {unverified && <VerifyEmailNotice />}
          {needsOrganization ? <NoOrganization /> : children}
        </main>
      </div>
    </div>
  )
}

function NoOrganization() {
  return (
    <div class="welcome">
      <h1>Welcome to nilegate</h1>
      <p>You are not in an organization yet. Create one, or open the invitation link an organization mailed you.</p>
      <p>
        <a class="button button-primary" href="/organizations/new">
          Create an organization
        </a>
      </p>
    </div>
  )
}
