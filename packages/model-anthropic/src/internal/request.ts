/**
 * A `ModelRequest` as Messages API parameters. Structured output travels as one more tool, the answer tool, whose
 * input schema is the output schema; the model is made to call a tool (`tool_choice`), and its call of the answer tool
 * comes back as the answer's text (see response.ts).
 */
import type { Chat, Json, ModelPort, ModelTransport } from "@artana/core"
import type {
  ContentBlockParam,
  MessageCreateParamsNonStreaming,
  MessageParam,
  Tool,
  ToolChoice
} from "@anthropic-ai/sdk/resources/messages"

/** How the answer tool is named on the wire, and whether its schema was wrapped (a non-object output schema). */
export interface AnswerTool {
  readonly name: string
  /** The output schema's root was not an object: the answer travels as `{ value: ... }`. */
  readonly wrapped: boolean
}

const isObject = (value: Json.Json | undefined): value is Json.JsonObject =>
  value !== null && value !== undefined && typeof value === "object" && !Array.isArray(value)

/**
 * The answer tool's wire name: the output format's name made valid (`output` by default), not clashing with a tool
 * of the request.
 */
export const answerTool = (request: ModelPort.ModelRequest, names: ModelTransport.WireNames): AnswerTool | undefined => {
  const format = request.outputFormat
  if (format === undefined) return undefined
  const taken = new Set(request.tools.map((t) => names.toWire(t.name)))
  const base = format.name.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 60) || "output"
  let name = base
  for (let i = 2; taken.has(name); i++) name = `${base}_${i}`
  return { name, wrapped: format.schema["type"] !== "object" }
}

/** A tool's input schema must be an object; any other output schema is wrapped as the property `value`. */
const inputSchema = (schema: Json.JsonObject, wrapped: boolean): Tool.InputSchema => {
  if (!wrapped) return { ...schema, type: "object" }
  // `$defs` stay at the root, where the schema's `$ref`s point.
  const { $defs, definitions, ...value } = schema
  return {
    type: "object",
    properties: { value },
    required: ["value"],
    additionalProperties: false,
    ...(isObject($defs) ? { $defs } : {}),
    ...(isObject(definitions) ? { definitions } : {})
  }
}

// The kernel keeps tool-call arguments as the JSON text the model wrote; the API wants them as an object.
const parseInput = (args: string): Record<string, unknown> => {
  try {
    const parsed: unknown = JSON.parse(args)
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? { ...parsed } : {}
  } catch {
    return {}
  }
}

const blocksOf = (message: Exclude<Chat.ChatMessage, Chat.SystemMessage>, names: ModelTransport.WireNames): Array<ContentBlockParam> => {
  switch (message.role) {
    case "user":
      return message.content.length === 0 ? [] : [{ type: "text", text: message.content }]
    case "tool":
      return [{ type: "tool_result", tool_use_id: message.toolCallId, content: message.content }]
    case "assistant": {
      // The API refuses empty text blocks.
      const text: Array<ContentBlockParam> = message.content === null || message.content.trim() === ""
        ? []
        : [{ type: "text", text: message.content }]
      const calls: Array<ContentBlockParam> = (message.toolCalls ?? []).map((call) => ({
        type: "tool_use",
        id: call.id,
        name: names.toWire(call.name),
        input: parseInput(call.arguments)
      }))
      return [...text, ...calls]
    }
  }
}

/**
 * The conversation as Messages: system messages go to `system` (in order, joined by a blank line); tool results are
 * `tool_result` blocks of a user turn; consecutive turns of one role are merged, as the API requires every result of
 * an assistant's tool calls in the one user turn after it.
 */
export const toMessages = (
  messages: ReadonlyArray<Chat.ChatMessage>,
  names: ModelTransport.WireNames
): { readonly system: string | undefined; readonly messages: Array<MessageParam> } => {
  const system: Array<string> = []
  const out: Array<{ role: "user" | "assistant"; content: Array<ContentBlockParam> }> = []
  for (const message of messages) {
    if (message.role === "system") {
      system.push(message.content)
      continue
    }
    const role = message.role === "assistant" ? "assistant" : "user"
    const blocks = blocksOf(message, names)
    if (blocks.length === 0) continue
    const last = out[out.length - 1]
    if (last !== undefined && last.role === role) last.content.push(...blocks)
    else out.push({ role, content: blocks })
  }
  return { system: system.length === 0 ? undefined : system.join("\n\n"), messages: out }
}

const ANSWER_DESCRIPTION = "Give your final answer by calling this tool: its input is the answer, in the required format. " +
  "Call the other tools first if you need their results."

/** Messages API parameters for `request`. */
export const toParams = (
  request: ModelPort.ModelRequest,
  names: ModelTransport.WireNames,
  answer: AnswerTool | undefined,
  defaultMaxTokens: number
): MessageCreateParamsNonStreaming => {
  const { messages, system } = toMessages(request.messages, names)
  const tools: Array<Tool> = request.tools.map((t) => ({
    name: names.toWire(t.name),
    description: t.description,
    input_schema: { ...t.parameters, type: "object" }
  }))
  let toolChoice: ToolChoice | undefined
  if (answer !== undefined && request.outputFormat !== undefined) {
    tools.push({ name: answer.name, description: ANSWER_DESCRIPTION, input_schema: inputSchema(request.outputFormat.schema, answer.wrapped) })
    // Only the answer tool: it must be called. Others too: some tool must be (a plain text answer would not decode).
    toolChoice = tools.length === 1 ? { type: "tool", name: answer.name } : { type: "any" }
  }
  return {
    model: request.model,
    max_tokens: request.maxOutputTokens ?? defaultMaxTokens,
    messages,
    ...(system === undefined ? {} : { system }),
    ...(tools.length === 0 ? {} : { tools }),
    ...(toolChoice === undefined ? {} : { tool_choice: toolChoice })
  }
}
