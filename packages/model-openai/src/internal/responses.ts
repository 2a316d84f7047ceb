/**
 * The Responses API (`POST /responses`): a `ModelRequest` as its parameters, and its answers (a whole `Response`, or
 * its stream of events) as the same `Reply` the Chat Completions path makes, so both share `check` and `toResponse`.
 */
import type { Chat, ModelPort, ModelTransport } from "@artana/core"
import type {
  FunctionTool,
  Response,
  ResponseCreateParamsNonStreaming,
  ResponseInputItem,
  ResponseStreamEvent
} from "openai/resources/responses/responses"
import { isStrictCompatible } from "./request.js"
import type { Reply } from "./response.js"

type WireNames = ModelTransport.WireNames

const inputOf = (message: Chat.ChatMessage, names: WireNames): ReadonlyArray<ResponseInputItem> => {
  switch (message.role) {
    case "system":
    case "user":
      return [{ type: "message", role: message.role, content: message.content }]
    case "tool":
      return [{ type: "function_call_output", call_id: message.toolCallId, output: message.content }]
    case "assistant": {
      const text: Array<ResponseInputItem> = message.content === null || message.content === ""
        ? []
        : [{ type: "message", role: "assistant", content: message.content }]
      const calls: Array<ResponseInputItem> = (message.toolCalls ?? []).map((call) => ({
        type: "function_call",
        call_id: call.id,
        name: names.toWire(call.name),
        arguments: call.arguments
      }))
      return [...text, ...calls]
    }
  }
}

// Function tools are strict by default in the Responses API; they are sent as Chat Completions sends them (not strict),
// so a schema outside strict mode's subset is no 400 and both APIs see the same tools.
const toolOf = (tool: Chat.ToolSpec, names: WireNames): FunctionTool => ({
  type: "function",
  name: names.toWire(tool.name),
  description: tool.description,
  parameters: tool.parameters,
  strict: false
})

const formatName = (name: string): string => name.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64) || "output"

/**
 * Responses API parameters for `request` (without `stream`). `store: false`: the kernel keeps the conversation in its
 * log and sends it whole each time, so nothing is left on OpenAI's side to expire or to chain with `previous_response_id`.
 */
export const toResponsesParams = (request: ModelPort.ModelRequest, names: WireNames): ResponseCreateParamsNonStreaming => ({
  model: request.model,
  input: request.messages.flatMap((m) => inputOf(m, names)),
  store: false,
  ...(request.tools.length === 0 ? {} : { tools: request.tools.map((t) => toolOf(t, names)) }),
  ...(request.outputFormat === undefined ? {} : {
    text: {
      format: {
        type: "json_schema",
        name: formatName(request.outputFormat.name),
        schema: request.outputFormat.schema,
        strict: isStrictCompatible(request.outputFormat.schema)
      }
    }
  }),
  ...(request.maxOutputTokens === undefined ? {} : { max_output_tokens: request.maxOutputTokens })
})

/** A whole `Response` as a `Reply`: its message's text and refusal, its function calls, why it stopped, its usage. */
export const fromResponse = (response: Response): Reply => {
  let content: string | null = null
  let refusal: string | null = null
  const toolCalls: Array<{ id: string; name: string; arguments: string }> = []
  for (const item of response.output) {
    if (item.type === "function_call") toolCalls.push({ id: item.call_id, name: item.name, arguments: item.arguments })
    if (item.type !== "message") continue
    for (const part of item.content) {
      if (part.type === "output_text") content = (content ?? "") + part.text
      else refusal = (refusal ?? "") + part.refusal
    }
  }
  const reason = response.incomplete_details?.reason
  const finishReason = reason === "max_output_tokens" ? "length" : reason === "content_filter" ? "content_filter" : response.status ?? null
  const usage = response.usage
  return {
    model: response.model,
    hasChoice: response.status !== "failed",
    content,
    refusal,
    toolCalls,
    finishReason,
    usage: usage === undefined ? undefined : {
      prompt_tokens: usage.input_tokens,
      completion_tokens: usage.output_tokens,
      total_tokens: usage.total_tokens,
      prompt_tokens_details: { cached_tokens: usage.input_tokens_details.cached_tokens }
    }
  }
}

/** What a stream of Responses events says, event by event: the deltas to pass on, and the whole response at its end. */
export interface StreamFolder {
  readonly push: (event: ResponseStreamEvent) => ReadonlyArray<ModelPort.ModelDelta>
  /** The response the terminal event (`response.completed` / `incomplete` / `failed`) carried; undefined before. */
  readonly response: () => Response | undefined
  /** The error an `error` event or a `response.failed` reported. */
  readonly failure: () => string | undefined
}

export const streamFolder = (names: WireNames): StreamFolder => {
  let final: Response | undefined
  let failure: string | undefined
  // The output index of each function call, and its index among the reply's calls.
  const calls = new Map<number, number>()
  const push = (event: ResponseStreamEvent): ReadonlyArray<ModelPort.ModelDelta> => {
    switch (event.type) {
      case "response.output_text.delta":
        return event.delta.length === 0 ? [] : [{ _tag: "TextDelta", text: event.delta }]
      case "response.output_item.added": {
        if (event.item.type !== "function_call") return []
        const index = calls.size
        calls.set(event.output_index, index)
        return [{ _tag: "ToolCallDelta", index, id: event.item.call_id, name: names.fromWire(event.item.name), arguments: event.item.arguments }]
      }
      case "response.function_call_arguments.delta": {
        const index = calls.get(event.output_index)
        return index === undefined ? [] : [{ _tag: "ToolCallDelta", index, arguments: event.delta }]
      }
      case "response.completed":
      case "response.incomplete":
        final = event.response
        return []
      case "response.failed":
        final = event.response
        failure = event.response.error?.message ?? "the response failed"
        return []
      case "error":
        failure = event.message
        return []
      default:
        return []
    }
  }
  return { push, response: () => final, failure: () => failure }
}
