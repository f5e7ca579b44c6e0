import { useLocation } from 'preact-iso'
import { can, isOperator } from '../lib/session'
import { customerNav, isCurrent, operatorNav, type NavItem } from './nav-items'

function NavList({ items, path }: { items: NavItem[]; path: string }) {
  return (
    <ul class="nav-list">
      {items
        .filter((item) => item.needs === undefined || can(item.needs))
        .map((item) => (
          <li key={item.href}>
            <a href={item.href} class="nav-link" aria-current={isCurrent(item.href, path) ? 'page' : undefined}>
              {item.label}
            </a>
          </li>
        ))}
    </ul>
  )
}

/** The pages of the organization, and the operators' pages for operators. */
export function SideNav({ open }: { open: boolean }) {
  const { path } = useLocation()
  return (
    <nav id="side-nav" class={open ? 'side-nav side-nav-open' : 'side-nav'} aria-label="Main">
      <NavList items={customerNav} path={path} />
      {isOperator.value && (
        <>
          <p class="nav-heading" id="operator-nav-heading">
            Platform
          </p>
          <NavList items={operatorNav} path={path} />
        </>
      )}
    </nav>
  )
}
