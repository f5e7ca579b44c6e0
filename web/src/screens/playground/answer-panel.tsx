import { formatCount, formatEgp, microsToEgp } from '../../lib/format'
import type { ModelObject } from '../../lib/sdk'
import { Button, ErrorAlert, Section } from '../../ui'
import { costMicros } from '../models/prices'
import type { StreamedAnswer } from './use-chat-stream'

const endings: Record<string, string> = {
  stop: 'The model finished its answer.',
  length: 'Cut at max_tokens: raise it for a longer answer.',
  content_filter: 'Stopped by a content filter.',
  tool_calls: 'The model asked to call a tool.',
}

/** The streamed answer, then its token counts and what they cost at the model's catalog prices. */
export function AnswerPanel({ answer, model, onContinue }: { answer: StreamedAnswer; model: ModelObject | undefined; onContinue: () => void }) {
  if (answer.state === 'idle') return null
  const streaming = answer.state === 'streaming'
  return (
    <Section title="Answer">
      <div class="answer" dir="auto" aria-live="polite" aria-busy={streaming}>
        {answer.text || (streaming ? <span class="muted">Waiting for the first token…</span> : answer.state === 'done' ? <span class="muted">(empty answer)</span> : null)}
        {streaming && <span class="cursor" aria-hidden="true" />}
      </div>
      {answer.state === 'stopped' && <p class="muted" role="status">Stopped. The tokens produced until then are billed.</p>}
      <ErrorAlert problem={answer.problem} />
      {answer.state === 'done' && (
        <>
          <Usage answer={answer} model={model} />
          {answer.text && (
            <Button small onClick={onContinue}>
              Add to the conversation
            </Button>
          )}
        </>
      )}
    </Section>
  )
}

function Usage({ answer, model }: { answer: StreamedAnswer; model: ModelObject | undefined }) {
  const usage = answer.usage
  const cost = usage && model ? costMicros(usage, model) : null
  return (
    <div role="status">
      <dl class="details usage-details">
        {usage ? (
          <>
            <dt>Tokens</dt>
            <dd>
              {formatCount(usage.prompt_tokens)} in + {formatCount(usage.completion_tokens)} out = {formatCount(usage.total_tokens)} tokens
            </dd>
            <dt>Cost</dt>
            <dd>{cost === null ? 'unknown (the model’s prices are not in the catalog)' : `${formatEgp(microsToEgp(cost), { exact: true })} at the catalog prices`}</dd>
          </>
        ) : (
          <>
            <dt>Tokens</dt>
            <dd>The gateway sent no usage for this answer.</dd>
          </>
        )}
        {answer.finishReason && (
          <>
            <dt>Ended</dt>
            <dd>{endings[answer.finishReason] ?? answer.finishReason}</dd>
          </>
        )}
        {answer.requestId && (
          <>
            <dt>Request id</dt>
            <dd>
              <code>{answer.requestId}</code>
            </dd>
          </>
        )}
      </dl>
    </div>
  )
}
