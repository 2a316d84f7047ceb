/**
 * Chat messages, tool calls and token usage: the data exchanged with a model.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { JsonObject } from "./Json.js"

/** A tool call the model asked for; `arguments` is the raw JSON text the model produced. */
export const ToolCall = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  arguments: Schema.String
})
export type ToolCall = typeof ToolCall.Type

export const SystemMessage = Schema.Struct({ role: Schema.Literal("system"), content: Schema.String })
export type SystemMessage = typeof SystemMessage.Type

export const UserMessage = Schema.Struct({ role: Schema.Literal("user"), content: Schema.String })
export type UserMessage = typeof UserMessage.Type

export const AssistantMessage = Schema.Struct({
  role: Schema.Literal("assistant"),
  content: Schema.NullOr(Schema.String),
  toolCalls: Schema.optional(Schema.Array(ToolCall))
})
export type AssistantMessage = typeof AssistantMessage.Type

export const ToolMessage = Schema.Struct({
  role: Schema.Literal("tool"),
  toolCallId: Schema.String,
  name: Schema.String,
  content: Schema.String
})
export type ToolMessage = typeof ToolMessage.Type

/** Any message of a conversation. */
export const ChatMessage = Schema.Union(SystemMessage, UserMessage, AssistantMessage, ToolMessage)
export type ChatMessage = typeof ChatMessage.Type

/** Token usage of one model call. */
export const Usage = Schema.Struct({
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  cachedInputTokens: Schema.optional(Schema.Number)
})
export type Usage = typeof Usage.Type

/** A tool as the model sees it: name, description and the JSON Schema of its arguments. */
export const ToolSpec = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  parameters: JsonObject
})
export type ToolSpec = typeof ToolSpec.Type

/** Shorthands for building messages. */
export const system = (content: string): SystemMessage => ({ role: "system", content })
export const user = (content: string): UserMessage => ({ role: "user", content })
export const assistant = (content: string | null, toolCalls?: ReadonlyArray<ToolCall>): AssistantMessage =>
  toolCalls === undefined || toolCalls.length === 0
    ? { role: "assistant", content }
    : { role: "assistant", content, toolCalls }
