import type { ApiKeyWithSecret } from '../../lib/sdk'
import { Button, CopyButton, Dialog } from '../../ui'

/** The secret of a new key, shown this once. */
export function SecretDialog({ apiKey, onClose }: { apiKey: ApiKeyWithSecret | null; onClose: () => void }) {
  const secret = apiKey?.value ?? null
  return (
    <Dialog
      open={apiKey !== null}
      title="Your new API key"
      onClose={onClose}
      actions={
        <Button variant="primary" onClick={onClose}>
          Done
        </Button>
      }
    >
      {secret === null ? (
        <p>The key was created, but its secret was already shown to the request that made it. Revoke it and create another if nobody kept it.</p>
      ) : (
        <>
          <p class="alert alert-warning">
            <strong>Copy it now. You will not see this key again.</strong> Keep it secret: anyone with it can spend this organization's credit.
          </p>
          <label for="new-key-secret" class="visually-hidden">
            Secret of the key <bdi>{apiKey?.name}</bdi>
          </label>
          <input id="new-key-secret" class="secret" readOnly value={secret} onFocus={(event) => event.currentTarget.select()} />
          <p>
            <CopyButton text={secret} label="Copy key" />
          </p>
        </>
      )}
    </Dialog>
  )
}
