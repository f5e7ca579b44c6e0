import type { ChatCompletion, ChatCompletionRequest } from '@nilegate/shared/schemas/chat'
import { answered, callOptions, unwrap, type RequestOptions, type Routes } from '../api'
import { ChatCompletionStream } from '../streaming'

/** The body of a chat completion: OpenAI's, checked against the gateway's own schema. */
export type ChatCompletionCreateParams = ChatCompletionRequest
/** A chat completion answered as one JSON object. */
export type ChatCompletionCreateParamsNonStreaming = ChatCompletionRequest & { stream?: false | null }
/** A chat completion answered as a stream of chunks. */
export type ChatCompletionCreateParamsStreaming = ChatCompletionRequest & { stream: true }

/** The routes that answer chat completions: with an API key, or the playground's with a session. */
type ChatRoute = Routes['chat']['completions'] | Routes['playground']['chat']['completions']

/** POST /v1/chat/completions, or the same on the playground's route. */
export class ChatCompletions {
  constructor(private readonly route: ChatRoute) {}

  /**
   * A chat completion; with `stream: true`, a stream of chunks to iterate with `for await`. Streams
   * ask for usage (`stream_options.include_usage`) unless told otherwise, so `stream.usage` holds
   * the request's token counts once the loop is done.
   */
  create(params: ChatCompletionCreateParamsNonStreaming, options?: RequestOptions): Promise<ChatCompletion>
  create(params: ChatCompletionCreateParamsStreaming, options?: RequestOptions): Promise<ChatCompletionStream>
  create(params: ChatCompletionCreateParams, options?: RequestOptions): Promise<ChatCompletion | ChatCompletionStream>
  async create(params: ChatCompletionCreateParams, options: RequestOptions = {}): Promise<ChatCompletion | ChatCompletionStream> {
    const post = this.route.post
    // The route's type also names the Response of a stream; a JSON answer is always a completion.
    if (params.stream !== true) return (await unwrap(post(params, callOptions(options)))) as ChatCompletion
    const body = { ...params, stream_options: { include_usage: true, ...params.stream_options } }
    const { response } = await answered(post(body, callOptions(options)))
    return new ChatCompletionStream(response, options.signal)
  }
}
