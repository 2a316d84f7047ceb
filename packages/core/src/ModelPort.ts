/**
 * The `ModelPort`: one completion. Messages, the tools the model may see and an optional output JSON Schema
 * go in; a message, tool calls and token usage come out. Providers implement only `generate`;
 * `ModelPort.make` adds what every provider shares.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { AssistantMessage, ChatMessage, ToolSpec, Usage } from "./Chat.js"
import { ModelError } from "./Errors.js"
import type { Json, JsonObject } from "./Json.js"
import type { PriceTable } from "./Pricing.js"

/** Structured output requested from the model. */
export interface OutputFormat {
  readonly name: string
  readonly schema: JsonObject
}

/** One model call as the kernel asks for it. */
export interface ModelRequest {
  readonly model: string
  readonly messages: ReadonlyArray<ChatMessage>
  readonly tools: ReadonlyArray<ToolSpec>
  readonly outputFormat?: OutputFormat | undefined
  readonly maxOutputTokens?: number | undefined
}

/** Something a provider wants in the log about a call (a transport retry, a fallback); written as a `MiddlewareNote`. */
export interface ProviderNote {
  readonly source: string
  readonly note: string
  readonly data: Json
}

/** What the model answered. `costUsd` is set by whoever knows the price (a provider, a metering middleware). */
export interface ModelResponse {
  readonly model: string
  readonly message: AssistantMessage
  readonly usage: Usage
  readonly costUsd?: number | undefined
  readonly notes?: ReadonlyArray<ProviderNote> | undefined
}

export interface Service {
  /** The model used when a request names none. */
  readonly defaultModel: string
  readonly generate: (request: ModelRequest) => Effect.Effect<ModelResponse, ModelError>
  /** Tokens a message list takes for `model` (compaction and budget estimates use it). */
  readonly countTokens: (messages: ReadonlyArray<ChatMessage>, model?: string) => Effect.Effect<number>
  /** The provider's own prices (see `Pricing`): after the deployment's, before the built-in table. */
  readonly prices?: PriceTable | undefined
}

/** The model the kernel talks to. */
export class ModelPort extends Context.Tag("@artana/core/ModelPort")<ModelPort, Service>() {}

/** What a provider supplies. */
export interface ProviderOptions {
  readonly defaultModel: string
  readonly generate: (request: ModelRequest) => Effect.Effect<ModelResponse, ModelError>
  readonly countTokens?: ((messages: ReadonlyArray<ChatMessage>, model: string) => Effect.Effect<number>) | undefined
  /** The provider's own prices, for models the built-in table does not know. */
  readonly prices?: PriceTable | undefined
}

/** Rough token count (4 characters a token, plus per-message overhead) for providers without a tokenizer. */
export const approximateTokens = (messages: ReadonlyArray<ChatMessage>): number => {
  let chars = 0
  for (const m of messages) {
    chars += (m.content ?? "").length
    if (m.role === "assistant") for (const call of m.toolCalls ?? []) chars += call.name.length + call.arguments.length
  }
  return Math.ceil(chars / 4) + messages.length * 4
}

/**
 * Builds a `ModelPort` from a provider's `generate`. Shared logic lives here, once: a tracing span, and every
 * tool call the model returns must carry an id and a name, or the call fails as `malformed_tool_call`.
 */
export const make = (options: ProviderOptions): Service => ({
  defaultModel: options.defaultModel,
  prices: options.prices,
  generate: Effect.fn("ModelPort.generate")(function*(request: ModelRequest) {
    const response = yield* options.generate(request)
    for (const call of response.message.toolCalls ?? []) {
      if (call.id.length === 0 || call.name.length === 0) {
        return yield* new ModelError({
          kind: "malformed_tool_call",
          reason: `the model returned a tool call without ${call.id.length === 0 ? "an id" : "a name"}`,
          retryable: true
        })
      }
    }
    // Tool calls naming unknown tools are kept: the kernel answers the model with an error so the loop recovers.
    return response
  }),
  countTokens: (messages, model) =>
    options.countTokens === undefined
      ? Effect.succeed(approximateTokens(messages))
      : options.countTokens(messages, model ?? options.defaultModel)
})

/** A layer providing `ModelPort` from a provider's options. */
export const layer = (options: ProviderOptions): Layer.Layer<ModelPort> => Layer.succeed(ModelPort, make(options))
