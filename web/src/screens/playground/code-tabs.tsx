import { useState } from 'preact/hooks'
import { CopyButton, Tabs } from '../../ui'
import { curlCode, nilegateSdkCode, openaiNodeCode, type PlaygroundRequest } from './request-code'

const languages = [
  { id: 'curl', label: 'curl', code: curlCode, copy: 'Copy curl command' },
  { id: 'openai', label: 'openai (Node)', code: openaiNodeCode, copy: 'Copy openai code' },
  { id: 'sdk', label: '@nilegate/sdk', code: nilegateSdkCode, copy: 'Copy @nilegate/sdk code' },
] as const

/** The exact request as code for an API key of the project, with a copy button per language. */
export function CodeTabs({ request }: { request: PlaygroundRequest | null }) {
  const [selected, setSelected] = useState<(typeof languages)[number]['id']>('curl')
  const language = languages.find((candidate) => candidate.id === selected)!
  const code = request && language.code(`${location.origin}/v1`, request)
  return (
    <Tabs label="Copy the request as" tabs={languages.map(({ id, label }) => ({ id, label }))} selected={selected} onSelect={(id) => setSelected(id as typeof selected)}>
      {code === null ? (
        <p class="muted">Fill in the model and a message (and fix any field marked) to see the request as code.</p>
      ) : (
        <>
          <p class="muted small">
            Set <code>NILEGATE_API_KEY</code> to an API key of the project: the code never carries your session.
          </p>
          <pre class="code-block" tabIndex={0} aria-label={`The request as ${language.label} code`}>
            <code>{code}</code>
          </pre>
          <CopyButton text={code} label={language.copy} />
        </>
      )}
    </Tabs>
  )
}
