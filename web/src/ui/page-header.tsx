import type { ComponentChildren } from 'preact'
import { useEffect, useId } from 'preact/hooks'

/** The page's one <h1> (also its document title), a line under it, and its main actions. */
export function PageHeader({ title, description, actions }: { title: string; description?: ComponentChildren; actions?: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · nilegate`
  }, [title])
  return (
    <header class="page-header">
      <div>
        <h1 dir="auto">{title}</h1>
        {description && <p class="muted">{description}</p>}
      </div>
      {actions && <div class="page-actions">{actions}</div>}
    </header>
  )
}

/** A titled part of a page (a region named by its title); the title may be a user's name, in any script. */
export function Section({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  const id = useId()
  return (
    <section class="section" aria-labelledby={id}>
      <div class="section-header">
        <h2 id={id} dir="auto">
          {title}
        </h2>
        {actions && <div class="section-actions">{actions}</div>}
      </div>
      {children}
    </section>
  )
}
