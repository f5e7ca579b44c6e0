import type { AuditLog } from '../../lib/sdk'

function shown(value: unknown): string {
  if (value === undefined) return '—'
  return typeof value === 'string' ? value : JSON.stringify(value)
}

/** A record's changes field by field: before and after side by side. */
export function AuditDiff({ changes }: { changes: AuditLog['changes'] }) {
  if (changes === null) return <span class="muted">—</span>
  const before = changes.before ?? {}
  const after = changes.after ?? {}
  const fields = [...new Set([...Object.keys(before), ...Object.keys(after)])]
  if (fields.length === 0) return <span class="muted">—</span>
  return (
    <details>
      <summary>
        {fields.length} field{fields.length === 1 ? '' : 's'}
      </summary>
      <table class="diff">
        <thead>
          <tr>
            <th scope="col">Field</th>
            <th scope="col">Before</th>
            <th scope="col">After</th>
          </tr>
        </thead>
        <tbody>
          {fields.map((field) => (
            <tr key={field}>
              <th scope="row" class="mono">
                {field}
              </th>
              <td class="diff-before" dir="auto">
                {shown(before[field])}
              </td>
              <td class="diff-after" dir="auto">
                {shown(after[field])}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  )
}
