/**
 * A Messages API reply, checked and turned into a `ModelResponse`: text blocks are the content, `tool_use` blocks the
 * tool calls, and a call of the answer tool (structured output) is the answer's text.
 */
import { type Chat, type ModelPort, ModelTransport } from "@artana/core"
import type { Message } from "@anthropic-ai/sdk/resources/messages"
import type { AnswerTool } from "./request.js"

const { failure } = ModelTransport

const excerpt = (text: string): string => (text.length > 200 ? `${text.slice(0, 200)}...` : text)

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)

/** The usage the kernel prices: every input token (cache reads and writes included), cache reads as cached input. */
const usageOf = (usage: Message["usage"]): Chat.Usage => {
  const cacheRead = usage.cache_read_input_tokens ?? 0
  const cacheWrite = usage.cache_creation_input_tokens ?? 0
  return {
    inputTokens: usage.input_tokens + cacheRead + cacheWrite,
    outputTokens: usage.output_tokens,
    ...(usage.cache_read_input_tokens === null || usage.cache_read_input_tokens === undefined ? {} : { cachedInputTokens: cacheRead })
  }
}

/**
 * Checks the reply and builds the response, or says why the attempt failed: a refusal, a context window the
 * conversation overflowed, an answer tool call whose input is not the wrapped value.
 */
export const toResponse = (
  reply: Message,
  request: ModelPort.ModelRequest,
  names: ModelTransport.WireNames,
  answer: AnswerTool | undefined,
  notes: ReadonlyArray<ModelPort.ProviderNote>
): ModelTransport.Failure | ModelPort.ModelResponse => {
  const checked = checkedResponse(reply, request, names, answer, notes)
  // A reply refused here was answered, and billed: the kernel charges what it reported (`ModelError.usage`).
  return "error" in checked ? ModelTransport.billedFailure(checked, usageOf(reply.usage)) : checked
}

const checkedResponse = (
  reply: Message,
  request: ModelPort.ModelRequest,
  names: ModelTransport.WireNames,
  answer: AnswerTool | undefined,
  notes: ReadonlyArray<ModelPort.ProviderNote>
): ModelTransport.Failure | ModelPort.ModelResponse => {
  if (reply.stop_reason === "refusal") {
    const said = reply.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("")
    return failure("refusal", `the model declined to answer${said.length > 0 ? `: ${excerpt(said)}` : ""}`, false)
  }
  if (reply.stop_reason === "model_context_window_exceeded") {
    return failure(
      "context_length_exceeded",
      `the answer did not fit the context window of model "${reply.model}"; compact the history or use a model with a larger context`,
      false
    )
  }
  const text: Array<string> = []
  const toolCalls: Array<Chat.ToolCall> = []
  let answered: string | undefined
  for (const block of reply.content) {
    if (block.type === "text") text.push(block.text)
    else if (block.type === "tool_use") {
      if (answer !== undefined && block.name === answer.name) {
        const value = answer.wrapped ? (isRecord(block.input) ? block.input["value"] : undefined) : block.input
        if (value === undefined) {
          return failure("malformed_tool_call", `the model's answer has no "value": ${excerpt(JSON.stringify(block.input))}`, true)
        }
        answered = JSON.stringify(value)
      } else {
        toolCalls.push({ id: block.id, name: names.fromWire(block.name), arguments: JSON.stringify(block.input ?? {}) })
      }
    }
    // Thinking and server-tool blocks are the provider's own business: not part of the conversation the kernel keeps.
  }
  const all = [...notes]
  if (reply.stop_reason === "max_tokens") {
    all.push({ source: "anthropic", note: "truncated", data: { stopReason: "max_tokens", maxOutputTokens: request.maxOutputTokens ?? null } })
  }
  const cacheWrite = reply.usage.cache_creation_input_tokens ?? 0
  if (cacheWrite > 0) {
    // Anthropic bills cache writes above the input price; the kernel's price table has no rate for them.
    all.push({ source: "anthropic", note: "cache_write", data: { inputTokens: cacheWrite } })
  }
  // Tool calls first: when the model also answered, the answer is dropped and asked for again after the tools ran.
  const content = toolCalls.length === 0 && answered !== undefined ? answered : text.join("")
  const message: Chat.AssistantMessage = toolCalls.length > 0
    ? { role: "assistant", content: content.length === 0 ? null : content, toolCalls }
    : { role: "assistant", content }
  return {
    model: reply.model.length > 0 ? reply.model : request.model,
    message,
    usage: usageOf(reply.usage),
    ...(all.length === 0 ? {} : { notes: all })
  }
}

export const isFailure = (u: ModelTransport.Failure | ModelPort.ModelResponse): u is ModelTransport.Failure => "error" in u
