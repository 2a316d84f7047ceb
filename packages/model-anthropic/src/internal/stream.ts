/**
 * A streamed Messages API reply (its server-sent events) folded into the `Message` a whole reply would be, and the
 * deltas each event carries for the kernel's live readers: text as `TextDelta`, a `tool_use` block as a `ToolCallDelta`
 * (its id and name first, then its input's JSON text piece by piece), the answer tool's input (structured output) as the
 * text it becomes. The folded message then goes through `toResponse`, exactly as a whole reply.
 */
import { type ModelPort, ModelTransport } from "@artana/core"
import type { ContentBlock, Message, RawMessageStreamEvent } from "@anthropic-ai/sdk/resources/messages"
import type { AnswerTool } from "./request.js"

export interface Accumulator {
  /** Folds one event in; returns the deltas it carries. */
  readonly push: (event: RawMessageStreamEvent) => ReadonlyArray<ModelPort.ModelDelta>
  /** The whole message, once the stream ended; a failure when it never started or a tool's input is not JSON. */
  readonly message: () => ModelTransport.Failure | Message
}

const excerpt = (text: string): string => (text.length > 200 ? `${text.slice(0, 200)}...` : text)

export const accumulator = (names: ModelTransport.WireNames, answer: AnswerTool | undefined): Accumulator => {
  let started: Message | undefined
  const blocks: Array<ContentBlock> = []
  // The input JSON text of each tool_use block (by block index), and its index among the reply's tool calls.
  const inputs = new Map<number, string>()
  const callIndex = new Map<number, number>()
  let delta: Partial<Pick<Message, "stop_reason" | "stop_sequence">> = {}
  let usage: Partial<Message["usage"]> = {}

  const push = (event: RawMessageStreamEvent): ReadonlyArray<ModelPort.ModelDelta> => {
    switch (event.type) {
      case "message_start":
        started = event.message
        return []
      case "content_block_start": {
        const block = event.content_block
        blocks[event.index] = { ...block }
        if (block.type === "text" && block.text.length > 0) return [{ _tag: "TextDelta", text: block.text }]
        if (block.type !== "tool_use" || (answer !== undefined && block.name === answer.name)) return []
        const index = callIndex.size
        callIndex.set(event.index, index)
        return [{ _tag: "ToolCallDelta", index, id: block.id, name: names.fromWire(block.name), arguments: "" }]
      }
      case "content_block_delta": {
        const block = blocks[event.index]
        if (event.delta.type === "text_delta" && block?.type === "text") {
          block.text += event.delta.text
          return [{ _tag: "TextDelta", text: event.delta.text }]
        }
        if (event.delta.type !== "input_json_delta" || block?.type !== "tool_use") return []
        const piece = event.delta.partial_json
        inputs.set(event.index, (inputs.get(event.index) ?? "") + piece)
        const index = callIndex.get(event.index)
        if (index !== undefined) return [{ _tag: "ToolCallDelta", index, arguments: piece }]
        // The answer tool's input is the answer's text (a wrapped one is not: `{ value }` is unwrapped at the end).
        return answer !== undefined && !answer.wrapped && piece.length > 0 ? [{ _tag: "TextDelta", text: piece }] : []
      }
      case "message_delta":
        delta = { stop_reason: event.delta.stop_reason, stop_sequence: event.delta.stop_sequence }
        usage = {
          output_tokens: event.usage.output_tokens,
          ...(event.usage.input_tokens === null ? {} : { input_tokens: event.usage.input_tokens }),
          ...(event.usage.cache_read_input_tokens === null ? {} : { cache_read_input_tokens: event.usage.cache_read_input_tokens }),
          ...(event.usage.cache_creation_input_tokens === null ? {} : { cache_creation_input_tokens: event.usage.cache_creation_input_tokens })
        }
        return []
      default:
        return []
    }
  }

  const message = (): ModelTransport.Failure | Message => {
    if (started === undefined) return ModelTransport.failure("server_error", "the stream ended before the message started", true)
    const content: Array<ContentBlock> = []
    for (const [i, block] of blocks.entries()) {
      if (block === undefined) continue
      const json = inputs.get(i)
      if (block.type !== "tool_use" || json === undefined) {
        content.push(block)
        continue
      }
      try {
        content.push({ ...block, input: json.trim() === "" ? {} : JSON.parse(json) })
      } catch (e) {
        const why = e instanceof Error ? e.message : String(e)
        return ModelTransport.failure("malformed_tool_call", `the model sent input for tool "${names.fromWire(block.name)}" that is not valid JSON (${why}): ${excerpt(json)}`, false)
      }
    }
    return { ...started, ...delta, content, usage: { ...started.usage, ...usage } }
  }

  return { push, message }
}
