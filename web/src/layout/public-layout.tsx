import type { ComponentChildren } from 'preact'

/** The frame of the pages used before signing in: the name, and the form in a card. */
export function PublicLayout({ children }: { children: ComponentChildren }) {
  return (
    <div class="public">
      <a href="#main" class="skip-link">
        Skip to content
      </a>
      <header class="public-header">
        <a href="/" class="brand">
          nilegate
        </a>
      </header>
      <main id="main" class="public-main" tabIndex={-1}>
        {children}
      </main>
    </div>
  )
}
