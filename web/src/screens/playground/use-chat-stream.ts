import { useEffect, useRef, useState } from 'preact/hooks'
import { reportError, type ApiProblem } from '../../lib/api'
import type { ChatMessage, Nilegate, Usage } from '../../lib/sdk'
import type { PlaygroundRequest } from './request-code'

/** Where the answer stands. */
export type StreamState = 'idle' | 'streaming' | 'done' | 'stopped' | 'failed'

/** The answer as it streams in, and how it ended. */
export interface StreamedAnswer {
  state: StreamState
  text: string
  usage: Usage | null
  finishReason: string | null
  requestId: string | null
  problem: ApiProblem | null
  /** The request this answer is for: its model prices the usage. */
  request: PlaygroundRequest | null
}

const idle: StreamedAnswer = { state: 'idle', text: '', usage: null, finishReason: null, requestId: null, problem: null, request: null }

/**
 * Sends a playground request and streams its answer token by token; `stop()` aborts it (the
 * gateway stops generating and bills what was produced). Leaving the page stops it too.
 */
export function useChatStream() {
  const [answer, setAnswer] = useState<StreamedAnswer>(idle)
  const controller = useRef<AbortController | null>(null)

  useEffect(() => () => controller.current?.abort(), [])

  const send = async (client: Nilegate, request: PlaygroundRequest) => {
    controller.current?.abort()
    const current = new AbortController()
    controller.current = current
    let text = ''
    setAnswer({ ...idle, state: 'streaming', request })
    try {
      const stream = await client.playground.chat.completions.create({ ...request, messages: request.messages as ChatMessage[] }, { signal: current.signal })
      setAnswer((previous) => ({ ...previous, requestId: stream.requestId }))
      let finishReason: string | null = null
      for await (const chunk of stream) {
        const choice = chunk.choices[0]
        if (choice?.delta.content) text += choice.delta.content
        if (choice?.finish_reason) finishReason = choice.finish_reason
        setAnswer((previous) => ({ ...previous, text, finishReason }))
      }
      setAnswer((previous) => ({ ...previous, state: 'done', text, usage: stream.usage, finishReason }))
    } catch (error) {
      if (current.signal.aborted) setAnswer((previous) => ({ ...previous, state: 'stopped', text }))
      else setAnswer((previous) => ({ ...previous, state: 'failed', text, problem: reportError(error) }))
    } finally {
      if (controller.current === current) controller.current = null
    }
  }

  return {
    answer,
    send,
    stop: () => controller.current?.abort(),
    clear: () => setAnswer(idle),
  }
}
