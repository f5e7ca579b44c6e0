import { useEffect, useState } from 'preact/hooks'
import { Button } from './button'

/** Copies `text` to the clipboard: the Clipboard API, or a selected text area where it is missing. */
export async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text)
      return true
    }
  } catch {
    // Refused (permissions, focus): fall back to selecting the text.
  }
  const area = document.createElement('textarea')
  area.value = text
  area.setAttribute('readonly', '')
  area.className = 'offscreen'
  document.body.append(area)
  area.select()
  try {
    return document.execCommand('copy')
  } catch {
    return false
  } finally {
    area.remove()
  }
}

/** A button that copies `text`, then says so for a moment (to screen readers too). */
export function CopyButton({ text, label = 'Copy', small = false }: { text: string; label?: string; small?: boolean }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle')

  useEffect(() => {
    if (state === 'idle') return
    const timer = setTimeout(() => setState('idle'), 2500)
    return () => clearTimeout(timer)
  }, [state])

  return (
    <span class="copy-button">
      <Button small={small} onClick={async () => setState((await copyText(text)) ? 'copied' : 'failed')}>
        {label}
      </Button>
      <span role="status" class="copy-status">
        {state === 'copied' ? 'Copied' : state === 'failed' ? 'Could not copy: select the text and copy it yourself' : ''}
      </span>
    </span>
  )
}
