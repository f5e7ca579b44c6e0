import type { ComponentChildren } from 'preact'
import { useId, useRef } from 'preact/hooks'

export interface TabItem {
  id: string
  label: string
}

/**
 * Tabs with the keyboard behaviour people expect: arrows move between tabs, Home and End jump,
 * only the selected tab is in the tab order. The panel shows the selected tab's children.
 */
export function Tabs({ tabs, selected, onSelect, label, children }: { tabs: TabItem[]; selected: string; onSelect: (id: string) => void; label: string; children: ComponentChildren }) {
  const base = useId()
  const list = useRef<HTMLDivElement>(null)

  const move = (index: number) => {
    const tab = tabs[(index + tabs.length) % tabs.length]!
    onSelect(tab.id)
    requestAnimationFrame(() => list.current?.querySelector<HTMLElement>(`#${CSS.escape(`${base}-tab-${tab.id}`)}`)?.focus())
  }

  const onKeyDown = (event: KeyboardEvent) => {
    const index = tabs.findIndex((tab) => tab.id === selected)
    const rtl = getComputedStyle(event.currentTarget as Element).direction === 'rtl'
    if (event.key === 'ArrowRight') move(index + (rtl ? -1 : 1))
    else if (event.key === 'ArrowLeft') move(index + (rtl ? 1 : -1))
    else if (event.key === 'Home') move(0)
    else if (event.key === 'End') move(tabs.length - 1)
    else return
    event.preventDefault()
  }

  return (
    <div class="tabs">
      <div class="tab-list" role="tablist" aria-label={label} ref={list} onKeyDown={onKeyDown}>
        {tabs.map((tab) => (
          <button
            key={tab.id}
            type="button"
            role="tab"
            id={`${base}-tab-${tab.id}`}
            aria-selected={tab.id === selected}
            aria-controls={`${base}-panel`}
            tabIndex={tab.id === selected ? 0 : -1}
            class="tab"
            onClick={() => onSelect(tab.id)}
          >
            {tab.label}
          </button>
        ))}
      </div>
      <div class="tab-panel" role="tabpanel" id={`${base}-panel`} aria-labelledby={`${base}-tab-${selected}`} tabIndex={0}>
        {children}
      </div>
    </div>
  )
}
