/**
 * A local Anthropic-compatible server for tests and offline examples: `POST /v1/messages`, answered from a script of
 * replies, one per request, as the Messages API answers: JSON, or server-sent events when the request asks for
 * `stream: true`. It records every request, so a test can assert what the real `@anthropic-ai/sdk` sent.
 *
 * @example
 * const server = await FakeAnthropic.start([FakeAnthropic.toolCall("get_balance", { accountId: "acc-1" }), FakeAnthropic.text("done")])
 * const model = AnthropicModel.layer({ baseURL: server.url })
 * // ... run, then: server.requests[1].body, await server.close()
 *
 * @since 0.1.0
 */
import { FakeProvider, ScriptedModel } from "@artana/core/testing"
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

/** Token usage a scripted answer reports (Anthropic's `input_tokens` excludes the cache reads and writes). */
export interface ScriptedUsage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cacheReadTokens?: number | undefined
  readonly cacheWriteTokens?: number | undefined
}

/** A tool call a scripted answer makes (`input` is sent as the `tool_use` block's input). */
export interface ScriptedToolCall {
  readonly name: string
  readonly input: unknown
  readonly id?: string | undefined
}

/** A 200 answer. */
export interface Answer {
  readonly _tag: "Answer"
  readonly text: string | null
  readonly toolCalls: ReadonlyArray<ScriptedToolCall>
  /** The structured answer: a call of the request's answer tool with this input. */
  readonly output: { readonly input: unknown; readonly name: string | undefined } | undefined
  readonly stopReason: "end_turn" | "max_tokens" | "tool_use" | "refusal" | "model_context_window_exceeded"
  readonly usage: ScriptedUsage
  /** The model the answer says answered; default the request's. */
  readonly model: string | undefined
  /** Streamed, the text (and each tool input) goes in this many pieces (default 3). */
  readonly pieces?: number | undefined
  /** Streamed, an `error` event (`overloaded_error`) replaces the rest of the stream after this many events. */
  readonly failAfter?: number | undefined
}

/** An HTTP error with an Anthropic error body (`{ type: "error", error: { type, message } }`). */
export interface HttpError {
  readonly _tag: "HttpError"
  readonly status: number
  readonly message: string
  readonly type: string
  readonly headers: Readonly<Record<string, string>>
}

/** One scripted reply (`Hang`: never answered, the request stays open until the client gives up). */
export type Reply = Answer | HttpError | FakeProvider.Hang

/** Usage reported when a reply does not set its own. */
export const defaultUsage: ScriptedUsage = { inputTokens: 10, outputTokens: 5 }

interface AnswerOptions {
  readonly usage?: ScriptedUsage | undefined
  readonly stopReason?: Answer["stopReason"] | undefined
  readonly model?: string | undefined
  readonly pieces?: number | undefined
  readonly failAfter?: number | undefined
}

const answer = (fields: Pick<Answer, "text" | "toolCalls" | "output">, stopReason: Answer["stopReason"], options: AnswerOptions): Reply => ({
  _tag: "Answer",
  ...fields,
  stopReason: options.stopReason ?? stopReason,
  usage: options.usage ?? defaultUsage,
  model: options.model,
  ...(options.pieces === undefined ? {} : { pieces: options.pieces }),
  ...(options.failAfter === undefined ? {} : { failAfter: options.failAfter })
})

/** A text answer. */
export const text = (content: string, options: AnswerOptions = {}): Reply =>
  answer({ text: content, toolCalls: [], output: undefined }, "end_turn", options)

/**
 * A structured answer: a call of the request's answer tool (the one `tool_choice` names, else the tool `name`, else
 * the request's last tool) with `value` as its input.
 */
export const output = (value: unknown, options: AnswerOptions & { readonly name?: string } = {}): Reply =>
  answer({ text: null, toolCalls: [], output: { input: value, name: options.name } }, "tool_use", options)

/** An answer calling tools, after an optional text. */
export const toolCalls = (calls: ReadonlyArray<ScriptedToolCall>, options: AnswerOptions & { readonly text?: string } = {}): Reply =>
  answer({ text: options.text ?? null, toolCalls: calls, output: undefined }, "tool_use", options)

/** An answer calling one tool. */
export const toolCall = (name: string, input: unknown, options: AnswerOptions & { readonly id?: string; readonly text?: string } = {}): Reply =>
  toolCalls([{ name, input, id: options.id }], options)

/** A refusal (`stop_reason: "refusal"`). */
export const refusal = (said = ""): Reply => answer({ text: said, toolCalls: [], output: undefined }, "refusal", {})

const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  504: "timeout_error",
  529: "overloaded_error"
}

/** An HTTP error; `retryAfter` sets the `retry-after` header (seconds). */
export const error = (
  status: number,
  options: { readonly message?: string; readonly type?: string; readonly retryAfter?: string; readonly headers?: Readonly<Record<string, string>> } = {}
): Reply => ({
  _tag: "HttpError",
  status,
  message: options.message ?? `scripted error ${status}`,
  type: options.type ?? ERROR_TYPES[status] ?? (status >= 500 ? "api_error" : "invalid_request_error"),
  headers: { ...options.headers, ...(options.retryAfter === undefined ? {} : { "retry-after": options.retryAfter }) }
})

/** A request the server never answers. */
export const hang: Reply = FakeProvider.hang

/** A request as the server received it. */
export type RecordedRequest = FakeProvider.RecordedRequest

/** The server: `url` is its origin, without `/v1` (which the SDK adds). */
export type Server = FakeProvider.Server

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)

/** The answer tool of a request: the one `tool_choice` names, else the last tool. */
const answerToolOf = (body: unknown): string => {
  if (!isRecord(body)) return "output"
  const choice = body["tool_choice"]
  if (isRecord(choice) && choice["type"] === "tool" && typeof choice["name"] === "string") return choice["name"]
  const tools = body["tools"]
  const last = Array.isArray(tools) ? tools[tools.length - 1] : undefined
  return isRecord(last) && typeof last["name"] === "string" ? last["name"] : "output"
}

const message = (reply: Answer, body: unknown, n: number) => {
  const requested = isRecord(body) && typeof body["model"] === "string" ? body["model"] : "claude-fake"
  const content: Array<
    | { readonly type: "text"; readonly text: string; readonly citations: null }
    | { readonly type: "tool_use"; readonly id: string; readonly name: string; readonly input: unknown }
  > = []
  if (reply.text !== null && reply.text.length > 0) content.push({ type: "text", text: reply.text, citations: null })
  reply.toolCalls.forEach((call, i) => {
    content.push({ type: "tool_use", id: call.id ?? `toolu_${n}_${i}`, name: call.name, input: call.input })
  })
  if (reply.output !== undefined) {
    content.push({ type: "tool_use", id: `toolu_${n}_answer`, name: reply.output.name ?? answerToolOf(body), input: reply.output.input })
  }
  return {
    id: `msg_fake_${n}`,
    type: "message",
    role: "assistant",
    model: reply.model ?? requested,
    content,
    stop_reason: reply.stopReason,
    stop_sequence: null,
    usage: {
      input_tokens: reply.usage.inputTokens,
      output_tokens: reply.usage.outputTokens,
      cache_read_input_tokens: reply.usage.cacheReadTokens ?? null,
      cache_creation_input_tokens: reply.usage.cacheWriteTokens ?? null
    }
  }
}

const errorBody = (message: string, type: string) => ({ type: "error", error: { type, message } })

// Text and tool inputs arrive in a few pieces, so a client must really accumulate deltas.
const { pieces } = ScriptedModel

/** The Messages API's server-sent events for `reply`, as [event name, data]. */
const events = (reply: Answer, body: unknown, n: number): Array<readonly [string, unknown]> => {
  const whole = message(reply, body, n)
  const count = reply.pieces ?? 3
  const out: Array<readonly [string, unknown]> = [
    ["message_start", { type: "message_start", message: { ...whole, content: [], stop_reason: null, usage: { ...whole.usage, output_tokens: 1 } } }]
  ]
  whole.content.forEach((block, index) => {
    if (block.type === "text") {
      out.push(["content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "", citations: null } }])
      for (const text of pieces(block.text, count)) out.push(["content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text } }])
    } else {
      out.push(["content_block_start", { type: "content_block_start", index, content_block: { type: "tool_use", id: block.id, name: block.name, input: {} } }])
      for (const partial_json of pieces(JSON.stringify(block.input), count)) {
        out.push(["content_block_delta", { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json } }])
      }
    }
    out.push(["content_block_stop", { type: "content_block_stop", index }])
  })
  out.push(["message_delta", {
    type: "message_delta",
    delta: { stop_reason: whole.stop_reason, stop_sequence: null, container: null, stop_details: null },
    usage: { ...whole.usage, input_tokens: null }
  }])
  out.push(["message_stop", { type: "message_stop" }])
  return out
}

const stream = (
  res: Parameters<FakeProvider.Protocol<Reply>["answer"]>[2],
  reply: Answer,
  body: unknown,
  n: number,
  headers: Readonly<Record<string, string>>,
  pace: FakeProvider.Pace | undefined
): void => {
  const all = events(reply, body, n)
  const sent: Array<readonly [string, unknown]> = reply.failAfter === undefined ? all : all.slice(0, reply.failAfter)
  if (sent.length < all.length) sent.push(["error", errorBody("Overloaded", "overloaded_error")])
  FakeProvider.sendEvents(res, sent, n, pace, ([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`, "", headers)
}

/** Options of `start`. */
export interface StartOptions {
  /**
   * Awaited before each event of a streamed answer is sent (`request` from 1, `chunk` from 0, of `chunks`): a test
   * streams slowly, or holds a stream where it wants.
   */
  readonly beforeChunk?: FakeProvider.Pace | undefined
}

const protocolOf = (options: StartOptions): FakeProvider.Protocol<Reply> => ({
  path: "/v1/messages",
  errorBody: (status, message) => errorBody(message, ERROR_TYPES[status] ?? "invalid_request_error"),
  answer: (reply, request, res, n) => {
    const headers = { "request-id": `req_fake_${n}` }
    if (reply._tag === "HttpError") {
      return FakeProvider.sendJson(res, reply.status, errorBody(reply.message, reply.type), { ...headers, ...reply.headers })
    }
    if (reply._tag !== "Answer") return
    if (isRecord(request.body) && request.body["stream"] === true) return stream(res, reply, request.body, n, headers, options.beforeChunk)
    FakeProvider.sendJson(res, 200, message(reply, request.body, n), headers)
  }
})

/** Starts a server on 127.0.0.1 (a free port) that plays `script`. */
export const start = (script: ReadonlyArray<Reply>, options: StartOptions = {}): Promise<Server> =>
  FakeProvider.start("FakeAnthropic", protocolOf(options), script)

/** `start` as a scoped resource: the server closes with the scope. */
export const scoped = (script: ReadonlyArray<Reply>, options: StartOptions = {}): Effect.Effect<Server, never, Scope.Scope> =>
  FakeProvider.scoped(() => start(script, options))
