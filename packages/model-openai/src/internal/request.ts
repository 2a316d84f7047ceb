/**
 * A `ModelRequest` as Chat Completions parameters.
 */
import type { Chat, Json, ModelPort, ModelTransport } from "@artana/core"
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool
} from "openai/resources/chat/completions"

type WireNames = ModelTransport.WireNames

const identity: WireNames = { toWire: (name) => name, fromWire: (name) => name }

export const toMessage = (message: Chat.ChatMessage, names: WireNames = identity): ChatCompletionMessageParam => {
  switch (message.role) {
    case "system":
      return { role: "system", content: message.content }
    case "user":
      return { role: "user", content: message.content }
    case "tool":
      return { role: "tool", tool_call_id: message.toolCallId, content: message.content }
    case "assistant": {
      const calls = message.toolCalls ?? []
      if (calls.length === 0) return { role: "assistant", content: message.content ?? "" }
      return {
        role: "assistant",
        content: message.content,
        tool_calls: calls.map((call) => ({
          id: call.id,
          type: "function",
          function: { name: names.toWire(call.name), arguments: call.arguments }
        }))
      }
    }
  }
}

const toTool = (tool: Chat.ToolSpec, names: WireNames): ChatCompletionTool => ({
  type: "function",
  function: { name: names.toWire(tool.name), description: tool.description, parameters: tool.parameters }
})

// response_format names must match ^[a-zA-Z0-9_-]{1,64}$.
const formatName = (name: string): string => name.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64) || "output"

/** Chat Completions parameters for `request` (without `stream`, which the caller adds). */
export const toParams = (request: ModelPort.ModelRequest, names: WireNames = identity): ChatCompletionCreateParamsNonStreaming => ({
  model: request.model,
  messages: request.messages.map((m) => toMessage(m, names)),
  ...(request.tools.length === 0 ? {} : { tools: request.tools.map((t) => toTool(t, names)) }),
  ...(request.outputFormat === undefined ? {} : {
    response_format: {
      type: "json_schema",
      json_schema: {
        name: formatName(request.outputFormat.name),
        schema: request.outputFormat.schema,
        strict: isStrictCompatible(request.outputFormat.schema)
      }
    }
  }),
  ...(request.maxOutputTokens === undefined ? {} : { max_completion_tokens: request.maxOutputTokens })
})

// ----------------------------------------------------------------------------------------- strict mode

// Keywords OpenAI's strict structured outputs accept. A schema using anything else (minLength, maxLength,
// patternProperties, default, ...) is rejected in strict mode with a 400, so it is sent with strict: false.
const STRICT_KEYWORDS = new Set([
  "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "$ref", "$defs",
  "definitions", "description", "title", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
  "exclusiveMaximum", "multipleOf", "minItems", "maxItems"
])

const isObject = (value: Json.Json | undefined): value is Json.JsonObject =>
  value !== null && value !== undefined && typeof value === "object" && !Array.isArray(value)

const strictNode = (node: Json.Json): boolean => {
  if (typeof node === "boolean") return false
  if (!isObject(node)) return false
  for (const key of Object.keys(node)) if (!STRICT_KEYWORDS.has(key)) return false
  const properties = node["properties"]
  if (node["type"] === "object" || properties !== undefined) {
    // Strict mode requires closed objects with every property required (optional fields are `T | null`).
    if (node["additionalProperties"] !== false) return false
    const props = isObject(properties) ? properties : {}
    const required = node["required"] ?? []
    if (!Array.isArray(required)) return false
    const names = Object.keys(props)
    if (required.length !== names.length || !names.every((n) => required.includes(n))) return false
    if (!Object.values(props).every(strictNode)) return false
  } else if (node["additionalProperties"] !== undefined && node["additionalProperties"] !== false) {
    return false
  }
  const items = node["items"]
  if (items !== undefined && (Array.isArray(items) || !strictNode(items))) return false
  const anyOf = node["anyOf"]
  if (anyOf !== undefined && (!Array.isArray(anyOf) || !anyOf.every(strictNode))) return false
  for (const defsKey of ["$defs", "definitions"]) {
    const defs = node[defsKey]
    if (defs !== undefined && (!isObject(defs) || !Object.values(defs).every(strictNode))) return false
  }
  return true
}

/**
 * True when OpenAI accepts `schema` with `strict: true`: the root is an object, every object is closed
 * (`additionalProperties: false`) and lists all its properties in `required`, and only supported keywords
 * appear. Effect's `Schema.Struct` of required fields produces exactly that.
 */
export const isStrictCompatible = (schema: Json.JsonObject): boolean => schema["type"] === "object" && strictNode(schema)
