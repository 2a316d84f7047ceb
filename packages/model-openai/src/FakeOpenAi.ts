/**
 * A local OpenAI-compatible server for tests and offline examples: `POST /v1/chat/completions` and `POST /v1/responses`
 * (the Responses API), answered as JSON or as an SSE stream (when the request asks for `stream: true`), from a script of
 * replies, one per request, whichever endpoint asks.
 * It records every request, so a test can assert what the real `openai` SDK sent.
 *
 * @example
 * const server = await FakeOpenAi.start([FakeOpenAi.toolCall("get_balance", { accountId: "acc-1" }), FakeOpenAi.text("done")])
 * const model = OpenAiModel.layer({ baseURL: server.url })
 * // ... run, then: server.requests[1].body, await server.close()
 *
 * @since 0.1.0
 */
import { FakeProvider, ScriptedModel } from "@artana/core/testing"
import * as Responses from "./internal/fakeResponses.js"
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

/** Token usage a scripted answer reports. */
export interface ScriptedUsage {
  readonly promptTokens: number
  readonly completionTokens: number
  readonly cachedTokens?: number | undefined
}

/** A tool call a scripted answer makes; `arguments` that are a string are sent verbatim (malformed JSON too). */
export interface ScriptedToolCall {
  readonly name: string
  readonly arguments: unknown
  readonly id?: string | undefined
}

/** A 200 answer. */
export interface Answer {
  readonly _tag: "Answer"
  readonly content: string | null
  readonly toolCalls: ReadonlyArray<ScriptedToolCall>
  readonly refusal: string | null
  readonly finishReason: "stop" | "length" | "tool_calls" | "content_filter"
  /** `null`: report no usage at all, as some OpenAI-compatible servers do. */
  readonly usage: ScriptedUsage | null
  /** Streamed, the text goes in this many chunks (default 3). */
  readonly pieces?: number | undefined
}

/** An HTTP error with an OpenAI error body (`{ error: { message, type, code } }`). */
export interface HttpError {
  readonly _tag: "HttpError"
  readonly status: number
  readonly message: string
  readonly code: string | null
  readonly type: string
  readonly headers: Readonly<Record<string, string>>
}

/** One scripted reply (`Hang`: never answered, the request stays open until the client gives up). */
export type Reply = Answer | HttpError | FakeProvider.Hang

/** Usage reported when a reply does not set its own. */
export const defaultUsage: ScriptedUsage = { promptTokens: 10, completionTokens: 5 }

type AnswerOptions = Partial<Pick<Answer, "usage" | "finishReason" | "pieces">>

/** A text answer. */
export const text = (content: string, options: AnswerOptions = {}): Reply => ({
  _tag: "Answer",
  content,
  toolCalls: [],
  refusal: null,
  finishReason: options.finishReason ?? "stop",
  usage: options.usage === undefined ? defaultUsage : options.usage,
  ...(options.pieces === undefined ? {} : { pieces: options.pieces })
})

/** An answer whose content is `value` as JSON (structured output). */
export const json = (value: unknown, options: AnswerOptions = {}): Reply => text(JSON.stringify(value), options)

/** An answer calling tools; `arguments` given as a string are sent as is (use it for malformed JSON). */
export const toolCalls = (calls: ReadonlyArray<ScriptedToolCall>, options: AnswerOptions & { readonly content?: string } = {}): Reply => ({
  _tag: "Answer",
  content: options.content ?? null,
  toolCalls: calls,
  refusal: null,
  finishReason: options.finishReason ?? "tool_calls",
  usage: options.usage === undefined ? defaultUsage : options.usage,
  ...(options.pieces === undefined ? {} : { pieces: options.pieces })
})

/** An answer calling one tool. */
export const toolCall = (name: string, args: unknown, options: AnswerOptions & { readonly id?: string } = {}): Reply =>
  toolCalls([{ name, arguments: args, id: options.id }], options)

/** A refusal (`message.refusal`), as OpenAI sends for structured output it will not produce. */
export const refusal = (reason: string): Reply => ({
  _tag: "Answer",
  content: null,
  toolCalls: [],
  refusal: reason,
  finishReason: "stop",
  usage: defaultUsage
})

/** An HTTP error; `retryAfter` sets the `retry-after` header (seconds). */
export const error = (
  status: number,
  options: { readonly message?: string; readonly code?: string; readonly type?: string; readonly retryAfter?: string; readonly headers?: Readonly<Record<string, string>> } = {}
): Reply => ({
  _tag: "HttpError",
  status,
  message: options.message ?? `scripted error ${status}`,
  code: options.code ?? null,
  type: options.type ?? (status >= 500 ? "server_error" : "invalid_request_error"),
  headers: { ...options.headers, ...(options.retryAfter === undefined ? {} : { "retry-after": options.retryAfter }) }
})

/** A request the server never answers. */
export const hang: Reply = FakeProvider.hang

/** A request as the server received it. */
export type RecordedRequest = FakeProvider.RecordedRequest

export interface Server extends Omit<FakeProvider.Server, "url"> {
  /** The base URL to give the SDK, ending in `/v1`. */
  readonly url: string
}

const completionId = (n: number) => `chatcmpl-fake-${n}`

const toolCallsOf = (answer: Answer, n: number) =>
  answer.toolCalls.map((call, i) => ({
    id: call.id ?? `call_${n}_${i}`,
    type: "function" as const,
    function: { name: call.name, arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments) }
  }))

const usageOf = (usage: ScriptedUsage) => ({
  prompt_tokens: usage.promptTokens,
  completion_tokens: usage.completionTokens,
  total_tokens: usage.promptTokens + usage.completionTokens,
  ...(usage.cachedTokens === undefined ? {} : { prompt_tokens_details: { cached_tokens: usage.cachedTokens } })
})

const completion = (answer: Answer, model: string, n: number) => {
  const calls = toolCallsOf(answer, n)
  return {
    id: completionId(n),
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{
      index: 0,
      message: { role: "assistant", content: answer.content, refusal: answer.refusal, ...(calls.length === 0 ? {} : { tool_calls: calls }) },
      finish_reason: answer.finishReason,
      logprobs: null
    }],
    ...(answer.usage === null ? {} : { usage: usageOf(answer.usage) })
  }
}

// Text arrives in a few pieces and tool arguments in two, so a client must really accumulate deltas.
const { pieces } = ScriptedModel

const chunks = (answer: Answer, model: string, n: number, includeUsage: boolean): Array<unknown> => {
  const base = { id: completionId(n), object: "chat.completion.chunk", created: Math.floor(Date.now() / 1000), model }
  const chunk = (delta: unknown, finishReason: string | null = null) => ({ ...base, choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }] })
  const out: Array<unknown> = [chunk({ role: "assistant", content: answer.content === null ? null : "" })]
  for (const piece of pieces(answer.content ?? "", answer.pieces ?? 3)) out.push(chunk({ content: piece }))
  if (answer.refusal !== null) for (const piece of pieces(answer.refusal, 2)) out.push(chunk({ refusal: piece }))
  toolCallsOf(answer, n).forEach((call, index) => {
    out.push(chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } }] }))
    for (const piece of pieces(call.function.arguments, 2)) out.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }))
  })
  out.push(chunk({}, answer.finishReason))
  if (includeUsage && answer.usage !== null) out.push({ ...base, choices: [], usage: usageOf(answer.usage) })
  return out
}

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)

const errorBody = (message: string, type: string, code: string | null) => ({ error: { message, type, param: null, code } })

/** Options of `start`. */
export interface StartOptions {
  /**
   * Awaited before each chunk of a streamed answer is sent (`request` from 1, `chunk` from 0, of `chunks`): a test
   * streams slowly, or holds a stream where it wants.
   */
  readonly beforeChunk?: FakeProvider.Pace | undefined
}

const RESPONSES = "/v1/responses"

const protocolOf = (startOptions: StartOptions): FakeProvider.Protocol<Reply> => ({
  path: ["/v1/chat/completions", RESPONSES],
  errorBody: (status, message) => errorBody(message, "invalid_request_error", status === 400 ? "script_exhausted" : null),
  answer: (reply, request, res, n) => {
    const body = request.body
    if (reply._tag === "HttpError") return FakeProvider.sendJson(res, reply.status, errorBody(reply.message, reply.type, reply.code), reply.headers)
    if (reply._tag !== "Answer") return
    const model = isRecord(body) && typeof body["model"] === "string" ? body["model"] : "fake-model"
    const streamed = isRecord(body) && body["stream"] === true
    if (request.path === RESPONSES) {
      if (!streamed) return FakeProvider.sendJson(res, 200, Responses.response(reply, model, n))
      const line = (e: unknown) => `event: ${isRecord(e) ? String(e["type"]) : "message"}\ndata: ${JSON.stringify(e)}\n\n`
      return FakeProvider.sendEvents(res, Responses.events(reply, model, n), n, startOptions.beforeChunk, line, "")
    }
    if (!streamed) return FakeProvider.sendJson(res, 200, completion(reply, model, n))
    const options = isRecord(body) ? body["stream_options"] : undefined
    const includeUsage = isRecord(options) && options["include_usage"] === true
    FakeProvider.sendEvents(res, chunks(reply, model, n, includeUsage), n, startOptions.beforeChunk, (c) => `data: ${JSON.stringify(c)}\n\n`, "data: [DONE]\n\n")
  }
})

/** Starts a server on 127.0.0.1 (a free port) that plays `script`. */
export const start = (script: ReadonlyArray<Reply>, startOptions: StartOptions = {}): Promise<Server> =>
  FakeProvider.start("FakeOpenAi", protocolOf(startOptions), script).then((server) => ({ ...server, url: `${server.url}/v1` }))

/** `start` as a scoped resource: the server closes with the scope. */
export const scoped = (script: ReadonlyArray<Reply>, options: StartOptions = {}): Effect.Effect<Server, never, Scope.Scope> =>
  FakeProvider.scoped(() => start(script, options))
