import type { ChatCompletion, ChatCompletionRequest } from '@nilegate/shared/schemas/chat'
import { answered, callOptions, unwrap, type GatewayApi, type RequestOptions } from '../api'
import { ChatCompletionStream } from '../streaming'

/** The body of a chat completion: OpenAI's, checked against the gateway's own schema. */
export type ChatCompletionCreateParams = ChatCompletionRequest
/** A chat completion answered as one JSON object. */
export type ChatCompletionCreateParamsNonStreaming = ChatCompletionRequest & { stream?: false | null }
/** A chat completion answered as a stream of chunks. */
export type ChatCompletionCreateParamsStreaming = ChatCompletionRequest & { stream: true }

/** POST /v1/chat/completions. */
export class ChatCompletions {
  constructor(private readonly api: GatewayApi) {}

  /**
   * A chat completion; with `stream: true`, a stream of chunks to iterate with `for await`. Streams
   * ask for usage (`stream_options.include_usage`) unless told otherwise, so `stream.usage` holds
   * the request's token counts once the loop is done.
   */
  create(params: ChatCompletionCreateParamsNonStreaming, options?: RequestOptions): Promise<ChatCompletion>
  create(params: ChatCompletionCreateParamsStreaming, options?: RequestOptions): Promise<ChatCompletionStream>
  create(params: ChatCompletionCreateParams, options?: RequestOptions): Promise<ChatCompletion | ChatCompletionStream>
  async create(params: ChatCompletionCreateParams, options: RequestOptions = {}): Promise<ChatCompletion | ChatCompletionStream> {
    const post = this.api.v1.chat.completions.post
    // The route's type also names the Response of a stream; a JSON answer is always a completion.
    if (params.stream !== true) return (await unwrap(post(params, callOptions(options)))) as ChatCompletion
    const body = { ...params, stream_options: { include_usage: true, ...params.stream_options } }
    const { response } = await answered(post(body, callOptions(options)))
    return new ChatCompletionStream(response, options.signal)
  }
}
