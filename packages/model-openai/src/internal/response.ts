/**
 * Chat Completions replies (whole or streamed) as one shape, checked, then turned into a `ModelResponse`.
 */
import { type Chat, type ModelPort, ModelTransport } from "@artana/core"
import * as Effect from "effect/Effect"
import type { CompletionUsage } from "openai/resources/completions"
import type { ChatCompletion, ChatCompletionChunk } from "openai/resources/chat/completions"
import { countMessages, countText } from "./tokens.js"

type Failure = ModelTransport.Failure

const { failure } = ModelTransport

interface ToolCall {
  id: string
  name: string
  arguments: string
}

/** The first choice of a reply, streamed or not. */
export interface Reply {
  readonly model: string
  readonly hasChoice: boolean
  readonly content: string | null
  readonly refusal: string | null
  readonly toolCalls: ReadonlyArray<ToolCall>
  readonly finishReason: string | null
  readonly usage: CompletionUsage | undefined
}

export const fromCompletion = (completion: ChatCompletion): Reply => {
  const choice = completion.choices[0]
  const toolCalls: Array<ToolCall> = []
  for (const call of choice?.message.tool_calls ?? []) {
    if (call.type === "function") toolCalls.push({ id: call.id, name: call.function.name, arguments: call.function.arguments })
  }
  return {
    model: completion.model,
    hasChoice: choice !== undefined,
    content: choice?.message.content ?? null,
    refusal: choice?.message.refusal ?? null,
    toolCalls,
    finishReason: choice?.finish_reason ?? null,
    usage: completion.usage ?? undefined
  }
}

/**
 * Whether a streamed event is a chunk as far as the fold reads one (an object with its `choices`): the SDK checks
 * nothing, and an event that is not one would otherwise fail the fold with a `TypeError`.
 */
export const isChunk = (u: unknown): u is ChatCompletionChunk => typeof u === "object" && u !== null && "choices" in u && Array.isArray(u.choices)

/** The deltas one chunk carries (text, then tool-call pieces), for a caller that streams them on. */
export const deltasOf = (chunk: ChatCompletionChunk): ReadonlyArray<ModelPort.ModelDelta> => {
  const choice = chunk.choices.find((c) => c.index === 0)
  if (choice === undefined) return []
  const out: Array<ModelPort.ModelDelta> = []
  if (choice.delta.content) out.push({ _tag: "TextDelta", text: choice.delta.content })
  for (const d of choice.delta.tool_calls ?? []) {
    out.push({
      _tag: "ToolCallDelta",
      index: d.index,
      ...(d.id ? { id: d.id } : {}),
      ...(d.function?.name ? { name: d.function.name } : {}),
      arguments: d.function?.arguments ?? ""
    })
  }
  return out
}

/** Folds chunks into one reply as they come: text and refusal deltas append, tool-call deltas merge by index. */
export const accumulator = () => {
  let model = ""
  let hasChoice = false
  let content: string | null = null
  let refusal: string | null = null
  let finishReason: string | null = null
  let usage: CompletionUsage | undefined
  const calls = new Map<number, ToolCall>()
  return {
    push: (chunk: ChatCompletionChunk): void => {
      if (chunk.model) model = chunk.model
      // With include_usage the last chunk carries the usage and no choices; some servers put it on every chunk.
      if (chunk.usage) usage = chunk.usage
      const choice = chunk.choices.find((c) => c.index === 0)
      if (choice === undefined) return
      hasChoice = true
      const delta = choice.delta
      if (delta.content) content = (content ?? "") + delta.content
      if (delta.refusal) refusal = (refusal ?? "") + delta.refusal
      for (const d of delta.tool_calls ?? []) {
        const call = calls.get(d.index) ?? { id: "", name: "", arguments: "" }
        calls.set(d.index, call)
        if (d.id) call.id = d.id
        if (d.function?.name) call.name = d.function.name
        if (d.function?.arguments) call.arguments += d.function.arguments
      }
      if (choice.finish_reason) finishReason = choice.finish_reason
    },
    reply: (): Reply => {
      const toolCalls = [...calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => ({ ...call }))
      return { model, hasChoice, content, refusal, toolCalls, finishReason, usage }
    }
  }
}

/** Folds a whole stream of chunks into one reply. */
export const accumulate = async (stream: AsyncIterable<ChatCompletionChunk>): Promise<Reply> => {
  const acc = accumulator()
  for await (const chunk of stream) acc.push(chunk)
  return acc.reply()
}

const excerpt = (text: string): string => (text.length > 200 ? `${text.slice(0, 200)}...` : text)

/**
 * Checks a reply: a refusal, a content-filtered answer, or tool-call arguments that are not JSON fail the attempt.
 * Returns the reply with its tool calls normalised (an empty argument string is `{}`, a missing id is made up).
 */
export const check = (reply: Reply): Failure | Reply => {
  const checked = checkChoice(reply)
  const usage = reply.usage === undefined ? undefined : usageOf(reply.usage)
  // A reply refused here was answered, and billed: the kernel charges what it reported (`ModelError.usage`).
  return isFailure(checked) && usage !== undefined
    ? ModelTransport.billedFailure(checked, usage)
    : checked
}

/** The usage a server reported, as the kernel counts it. */
const usageOf = (reported: CompletionUsage): Chat.Usage => {
  const cached = reported.prompt_tokens_details?.cached_tokens
  return { inputTokens: reported.prompt_tokens, outputTokens: reported.completion_tokens, ...(cached === undefined ? {} : { cachedInputTokens: cached }) }
}

const checkChoice = (reply: Reply): Failure | Reply => {
  if (!reply.hasChoice) return failure("server_error", "the server's reply has no choices", true)
  if (reply.refusal !== null && reply.refusal.length > 0) {
    return failure("refusal", `the model refused to answer: ${excerpt(reply.refusal)}`, false)
  }
  if (reply.finishReason === "content_filter") {
    return failure("refusal", "the provider's content filter withheld the answer; rephrase the request", false)
  }
  const toolCalls: Array<ToolCall> = []
  for (const [i, call] of reply.toolCalls.entries()) {
    // Some servers send "" for a tool without parameters; that is no arguments, not malformed JSON.
    const args = call.arguments.trim() === "" ? "{}" : call.arguments
    try {
      JSON.parse(args)
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e)
      // Cut off by the token limit, a re-ask would be cut off again.
      const truncated = reply.finishReason === "length"
      return failure(
        "malformed_tool_call",
        `the model sent arguments for tool "${call.name}" that are not valid JSON (${why}): ${excerpt(args)}` +
          (truncated ? "; the answer hit the output token limit, raise maxOutputTokens" : ""),
        !truncated
      )
    }
    // Some OpenAI-compatible servers omit ids; the id only pairs the call with its result message.
    toolCalls.push({ id: call.id.length > 0 ? call.id : `call_${i}`, name: call.name, arguments: args })
  }
  return { ...reply, toolCalls }
}

export const isFailure = (u: Failure | Reply): u is Failure => "error" in u

/** The checked reply as a `ModelResponse`; usage is estimated (and noted) when the server reported none. */
export const toResponse = (
  reply: Reply,
  request: ModelPort.ModelRequest,
  notes: ReadonlyArray<ModelPort.ProviderNote>
): Effect.Effect<ModelPort.ModelResponse> =>
  Effect.gen(function*() {
    const model = reply.model.length > 0 ? reply.model : request.model
    const message: Chat.AssistantMessage = reply.toolCalls.length > 0
      ? { role: "assistant", content: reply.content, toolCalls: reply.toolCalls.map((c) => ({ ...c })) }
      : { role: "assistant", content: reply.content ?? "" }
    const all = [...notes]
    if (reply.finishReason === "length") {
      all.push({ source: "openai", note: "truncated", data: { finishReason: "length", maxOutputTokens: request.maxOutputTokens ?? null } })
    }
    let usage: Chat.Usage
    if (reply.usage !== undefined) {
      usage = usageOf(reply.usage)
    } else {
      const inputTokens = yield* countMessages(request.messages, request.model)
      const written = (message.content ?? "") + (message.toolCalls ?? []).map((c) => c.name + c.arguments).join("")
      const outputTokens = yield* countText(written, request.model)
      usage = { inputTokens, outputTokens }
      all.push({ source: "openai", note: "usage_estimated", data: { inputTokens, outputTokens } })
    }
    return { model, message, usage, ...(all.length === 0 ? {} : { notes: all }) }
  })
