import { Button, SelectField, TextAreaField } from '../../ui'
import type { DraftMessage, MessageRole } from './request-code'

const roleNames: Record<MessageRole, string> = { system: 'System', user: 'User', assistant: 'Assistant' }

/** "User message", or "User message 2" for the second of its role: a name that tells the fields apart. */
export function messageLabel(messages: DraftMessage[], index: number): string {
  const role = messages[index]!.role
  const nth = messages.slice(0, index + 1).filter((message) => message.role === role).length
  return `${roleNames[role]} message${nth > 1 ? ` ${nth}` : ''}`
}

/**
 * The conversation to send: each message's role and text (right to left when it is Arabic), added
 * and removed freely.
 */
export function MessagesEditor({ messages, error, onChange }: { messages: DraftMessage[]; error?: string | null; onChange: (messages: DraftMessage[]) => void }) {
  const change = (index: number, update: Partial<DraftMessage>) => onChange(messages.map((message, at) => (at === index ? { ...message, ...update } : message)))
  const lastRole = messages.at(-1)?.role
  return (
    <fieldset class="messages">
      <legend>Messages</legend>
      <ol class="message-list">
        {messages.map((message, index) => {
          const label = messageLabel(messages, index)
          return (
            <li key={index} class="message-item">
              <div class="message-head">
                <SelectField
                  label={
                    <>
                      Role<span class="visually-hidden"> of message {index + 1}</span>
                    </>
                  }
                  value={message.role} onChange={(event) => change(index, { role: event.currentTarget.value as MessageRole })}>
                  <option value="system">System</option>
                  <option value="user">User</option>
                  <option value="assistant">Assistant</option>
                </SelectField>
                {messages.length > 1 && (
                  <Button small variant="ghost" aria-label={`Remove message ${index + 1}`} onClick={() => onChange(messages.filter((_, at) => at !== index))}>
                    Remove
                  </Button>
                )}
              </div>
              <TextAreaField label={label} rows={message.role === 'system' ? 2 : 4} value={message.content} onInput={(event) => change(index, { content: event.currentTarget.value })} />
            </li>
          )
        })}
      </ol>
      {error && <p class="field-error">{error}</p>}
      <Button small onClick={() => onChange([...messages, { role: lastRole === 'user' ? 'assistant' : 'user', content: '' }])}>
        Add message
      </Button>
    </fieldset>
  )
}
