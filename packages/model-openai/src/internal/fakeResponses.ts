/**
 * `FakeOpenAi`'s Responses API (`POST /v1/responses`): a scripted answer as a whole `Response`, or as the server-sent
 * events a streamed one is made of (`response.created`, `response.output_item.added`, `response.output_text.delta`,
 * `response.function_call_arguments.delta`, ..., `response.completed` or `response.incomplete`).
 */
import { ScriptedModel } from "@artana/core/testing"
import type { Answer, ScriptedUsage } from "../FakeOpenAi.js"

const { pieces } = ScriptedModel

const usageOf = (usage: ScriptedUsage) => ({
  input_tokens: usage.promptTokens,
  input_tokens_details: { cached_tokens: usage.cachedTokens ?? 0 },
  output_tokens: usage.completionTokens,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: usage.promptTokens + usage.completionTokens
})

const argumentsOf = (args: unknown): string => (typeof args === "string" ? args : JSON.stringify(args))

/** The output items of an answer: its message (text or refusal), then one `function_call` per tool call. */
const outputOf = (answer: Answer, n: number) => {
  const items: Array<Record<string, unknown>> = []
  const content = [
    ...(answer.content === null ? [] : [{ type: "output_text", text: answer.content, annotations: [], logprobs: [] }]),
    ...(answer.refusal === null ? [] : [{ type: "refusal", refusal: answer.refusal }])
  ]
  if (content.length > 0) items.push({ type: "message", id: `msg_fake_${n}`, role: "assistant", status: "completed", content })
  answer.toolCalls.forEach((call, i) => {
    items.push({ type: "function_call", id: `fc_fake_${n}_${i}`, call_id: call.id ?? `call_${n}_${i}`, name: call.name, arguments: argumentsOf(call.arguments), status: "completed" })
  })
  return items
}

/** The whole `Response` of an answer: `incomplete` when it hit the token limit or the content filter. */
export const response = (answer: Answer, model: string, n: number) => {
  const incomplete = answer.finishReason === "length" ? "max_output_tokens" : answer.finishReason === "content_filter" ? "content_filter" : undefined
  return {
    id: `resp_fake_${n}`,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    model,
    status: incomplete === undefined ? "completed" : "incomplete",
    incomplete_details: incomplete === undefined ? null : { reason: incomplete },
    error: null,
    output: outputOf(answer, n),
    parallel_tool_calls: true,
    tool_choice: "auto",
    tools: [],
    ...(answer.usage === null ? {} : { usage: usageOf(answer.usage) })
  }
}

/** The events of a streamed answer, as [event type, data]; text in `answer.pieces` (default 3), arguments in two. */
export const events = (answer: Answer, model: string, n: number): Array<unknown> => {
  const whole = response(answer, model, n)
  const out: Array<Record<string, unknown>> = [{ type: "response.created", response: { ...whole, status: "in_progress", output: [], usage: null } }]
  whole.output.forEach((item, output_index) => {
    if (item["type"] === "message") {
      out.push({ type: "response.output_item.added", output_index, item: { ...item, status: "in_progress", content: [] } })
      const parts = item["content"]
      if (Array.isArray(parts)) {
        parts.forEach((part: { readonly type: string; readonly text?: string; readonly refusal?: string }, content_index) => {
          const item_id = item["id"]
          if (part.type === "output_text") {
            for (const delta of pieces(part.text ?? "", answer.pieces ?? 3)) out.push({ type: "response.output_text.delta", item_id, output_index, content_index, delta, logprobs: [] })
            out.push({ type: "response.output_text.done", item_id, output_index, content_index, text: part.text, logprobs: [] })
          } else {
            for (const delta of pieces(part.refusal ?? "", 2)) out.push({ type: "response.refusal.delta", item_id, output_index, content_index, delta })
          }
        })
      }
    } else {
      const args = typeof item["arguments"] === "string" ? item["arguments"] : ""
      out.push({ type: "response.output_item.added", output_index, item: { ...item, arguments: "", status: "in_progress" } })
      for (const delta of pieces(args, 2)) out.push({ type: "response.function_call_arguments.delta", item_id: item["id"], output_index, delta })
      out.push({ type: "response.function_call_arguments.done", item_id: item["id"], output_index, arguments: args })
    }
    out.push({ type: "response.output_item.done", output_index, item })
  })
  out.push({ type: whole.status === "completed" ? "response.completed" : "response.incomplete", response: whole })
  return out.map((e, sequence_number) => ({ ...e, sequence_number }))
}
