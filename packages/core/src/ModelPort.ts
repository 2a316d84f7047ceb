/**
 * The `ModelPort`: one completion. Messages, the tools the model may see and an optional output JSON Schema
 * go in; a message, tool calls and token usage come out. Providers implement only `generate`;
 * `ModelPort.make` adds what every provider shares.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
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

/** A piece of the answer's text, as the model produced it. */
export const TextDelta = Schema.TaggedStruct("TextDelta", { text: Schema.String })
export type TextDelta = typeof TextDelta.Type

/**
 * A piece of a tool call: `index` names the call within the reply; `id` and `name` come with its first piece,
 * `arguments` is the next piece of its JSON text.
 */
export const ToolCallDelta = Schema.TaggedStruct("ToolCallDelta", {
  index: Schema.Int,
  id: Schema.optional(Schema.String),
  name: Schema.optional(Schema.String),
  arguments: Schema.String
})
export type ToolCallDelta = typeof ToolCallDelta.Type

/** A piece of a reply while it streams. */
export const ModelDelta = Schema.Union(TextDelta, ToolCallDelta)
export type ModelDelta = typeof ModelDelta.Type

/** The end of a streamed call: the whole reply, exactly as `generate` would have answered. */
export interface Finished {
  readonly _tag: "Finished"
  readonly response: ModelResponse
}

/** What a streamed call emits: deltas, then one `Finished`. */
export type StreamPart = ModelDelta | Finished

/**
 * Where the push path of a streamed call (`streamTo`) hands its deltas, synchronously, as they arrive (deltas that
 * arrived together in one call). It does not throw. It returns false once it wants no more (a budget crossed): the
 * provider stops reading then, and the caller interrupts `streamTo`'s effect, which ends the provider's request.
 * `model`: the model the deltas come from, when a port hands calls among models (`ModelFallback` says which): the
 * kernel prices a stream's stop at it.
 */
export type DeltaSink = (deltas: ReadonlyArray<ModelDelta>, model?: string) => boolean

export interface Service {
  /** The model used when a request names none. */
  readonly defaultModel: string
  readonly generate: (request: ModelRequest) => Effect.Effect<ModelResponse, ModelError>
  /**
   * The same call, streamed: the reply's deltas as they come, then `Finished` with the reply assembled exactly as
   * `generate` returns it (the reply is the source of truth; the deltas are a preview of it). A provider that does
   * not stream emits `Finished` alone.
   */
  readonly stream: (request: ModelRequest) => Stream.Stream<StreamPart, ModelError>
  /**
   * The same streamed call on the push path: each delta goes to `sink` as it arrives (no Effect work between the
   * provider's answer and the sink), and the effect succeeds with the reply `stream`'s `Finished` carries. The kernel
   * streams through this; interrupting the effect ends the provider's request.
   */
  readonly streamTo: (request: ModelRequest, sink: DeltaSink) => Effect.Effect<ModelResponse, ModelError>
  /** Tokens a message list takes for `model` (compaction and budget estimates use it). */
  readonly countTokens: (messages: ReadonlyArray<ChatMessage>, model?: string) => Effect.Effect<number>
  /** The provider's own prices (see `Pricing`): after the deployment's, before the built-in table. */
  readonly prices?: PriceTable | undefined
  /**
   * The models a call sent for `model` may be answered (and billed) by, when the port may hand it to other models
   * (`ModelFallback`: the model asked for, then each later model's default). The kernel's pre-call estimate, the hold
   * it takes on the budget and a stream's stop price the call at the dearest of them. Absent: `model` alone.
   */
  readonly answeredBy?: ((model: string) => ReadonlyArray<string>) | undefined
  /**
   * True when each of the models `answeredBy` names may bill one call for `model` (a fallback that hands on a reply a
   * model answered and billed, such as a refusal): the kernel's pre-call estimate, its hold and the check against the
   * budget are then the sum of their prices, rate by rate, not the dearest. Absent: one model bills a call.
   */
  readonly billsEach?: ((model: string) => boolean) | undefined
}

/** The model the kernel talks to. */
export class ModelPort extends Context.Tag("@artana/core/ModelPort")<ModelPort, Service>() {}

/** What a provider supplies. */
export interface ProviderOptions {
  readonly defaultModel: string
  readonly generate: (request: ModelRequest) => Effect.Effect<ModelResponse, ModelError>
  /**
   * The provider's streamed call (optional): deltas, then exactly one `Finished`. Absent, `stream` answers with
   * `generate`'s reply in one `Finished`.
   */
  readonly stream?: ((request: ModelRequest) => Stream.Stream<StreamPart, ModelError>) | undefined
  /**
   * The provider's streamed call on the push path (optional, instead of `stream`): deltas to `sink` as they arrive,
   * the reply as the effect's value. Given, `stream` is made from it; absent, `streamTo` is made from `stream`.
   */
  readonly streamTo?: ((request: ModelRequest, sink: DeltaSink) => Effect.Effect<ModelResponse, ModelError>) | undefined
  readonly countTokens?: ((messages: ReadonlyArray<ChatMessage>, model: string) => Effect.Effect<number>) | undefined
  /** The provider's own prices, for models the built-in table does not know. */
  readonly prices?: PriceTable | undefined
  /** `Service.answeredBy`: a port that hands calls on to other models names them here. */
  readonly answeredBy?: ((model: string) => ReadonlyArray<string>) | undefined
  /** `Service.billsEach`: a port whose call each of those models may bill says so here. */
  readonly billsEach?: ((model: string) => boolean) | undefined
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
export const make = (options: ProviderOptions): Service => {
  const checked = (response: ModelResponse): Effect.Effect<ModelResponse, ModelError> => {
    for (const call of response.message.toolCalls ?? []) {
      if (call.id.length === 0 || call.name.length === 0) {
        return Effect.fail(new ModelError({
          kind: "malformed_tool_call",
          reason: `the model returned a tool call without ${call.id.length === 0 ? "an id" : "a name"}`,
          retryable: true,
          // The reply was billed: the kernel charges it though it is refused.
          usage: response.usage
        }))
      }
    }
    // Tool calls naming unknown tools are kept: the kernel answers the model with an error so the loop recovers.
    return Effect.succeed(response)
  }
  const generate = Effect.fn("ModelPort.generate")(function*(request: ModelRequest) {
    return yield* checked(yield* options.generate(request))
  })
  const pushed = options.streamTo
  const provided = options.stream
  const fromProvider = provided === undefined ? undefined : checkedStream(provided, checked)
  const streamTo = pushed !== undefined
    ? (request: ModelRequest, sink: DeltaSink) => Effect.flatMap(pushed(request, sink), checked)
    : fromProvider !== undefined
    ? (request: ModelRequest, sink: DeltaSink) => pushedFrom(fromProvider(request), sink)
    : generate
  const stream = pushed !== undefined
    ? (request: ModelRequest) => streamOf(streamTo, request)
    : fromProvider ?? ((request: ModelRequest): Stream.Stream<StreamPart, ModelError> =>
      Stream.fromEffect(Effect.map(generate(request), (response): StreamPart => ({ _tag: "Finished", response }))))
  return {
  defaultModel: options.defaultModel,
  prices: options.prices,
  answeredBy: options.answeredBy,
  billsEach: options.billsEach,
  generate,
  stream,
  streamTo,
  countTokens: (messages, model) =>
    options.countTokens === undefined
      ? Effect.succeed(approximateTokens(messages))
      : options.countTokens(messages, model ?? options.defaultModel)
  }
}

/**
 * A provider's stream, checked: exactly one `Finished`, last (a stream that ends without one, or goes on after it, is a
 * bad reply), its reply through `checked`.
 */
const checkedStream = (
  provided: (request: ModelRequest) => Stream.Stream<StreamPart, ModelError>,
  checked: (response: ModelResponse) => Effect.Effect<ModelResponse, ModelError>
) =>
(request: ModelRequest): Stream.Stream<StreamPart, ModelError> =>
  Stream.suspend(() => {
    let finished = false
    // A chunk at a time (deltas that arrived together pass in one step): only the `Finished` part is checked.
    const parts = Stream.mapChunksEffect(provided(request), (chunk): Effect.Effect<Chunk.Chunk<StreamPart>, ModelError> => {
      let out: Effect.Effect<Chunk.Chunk<StreamPart>, ModelError> = Effect.succeed(chunk)
      for (const part of chunk) {
        if (finished) return Effect.fail(new ModelError({ kind: "server_error", reason: "the model's stream went on after its reply ended", retryable: true }))
        if (part._tag !== "Finished") continue
        finished = true
        const response = part.response
        out = Effect.map(checked(response), (ok) => Chunk.map(chunk, (p): StreamPart => (p._tag === "Finished" ? { _tag: "Finished", response: ok } : p)))
      }
      return out
    })
    const end = Stream.suspend(() =>
      finished ? Stream.empty : Stream.fail(new ModelError({ kind: "server_error", reason: "the model's stream ended before its reply did", retryable: true }))
    )
    // No `Stream.withSpan` here: it provides the span to every pull, which cost more than the rest of a delta's way to a
    // reader (`pnpm bench live`); the kernel's `artana.model` span covers a streamed call.
    return Stream.concat(parts, end)
  })

/** A (checked) stream on the push path: its deltas to `sink` a chunk at a time, its `Finished` reply as the value. */
const pushedFrom = (parts: Stream.Stream<StreamPart, ModelError>, sink: DeltaSink): Effect.Effect<ModelResponse, ModelError> =>
  Effect.suspend(() => {
    let response: ModelResponse | undefined
    return Stream.runForEachWhile(Stream.chunks(parts), (chunk) =>
      Effect.sync(() => {
        const deltas: Array<ModelDelta> = []
        for (const part of chunk) {
          if (part._tag === "Finished") response = part.response
          else deltas.push(part)
        }
        return deltas.length === 0 || sink(deltas)
      })).pipe(
        Effect.flatMap(() =>
          response === undefined
            ? Effect.fail(new ModelError({ kind: "server_error", reason: "the model's stream ended before its reply did", retryable: true }))
            : Effect.succeed(response)
        )
      )
  })

/** The push path as a stream: the deltas as they come, then the reply as `Finished`. */
const streamOf = (
  streamTo: (request: ModelRequest, sink: DeltaSink) => Effect.Effect<ModelResponse, ModelError>,
  request: ModelRequest
): Stream.Stream<StreamPart, ModelError> =>
  Stream.asyncPush<StreamPart, ModelError>((emit) =>
    Effect.forkScoped(Effect.matchEffect(streamTo(request, (deltas) => emit.array(deltas)), {
      onFailure: (error) => Effect.sync(() => void emit.fail(error)),
      onSuccess: (response) =>
        Effect.sync(() => {
          emit.single({ _tag: "Finished", response })
          emit.end()
        })
    }))
  )

/**
 * Folds deltas into the text and tool calls they spell (text appends; tool-call pieces merge by index), as a
 * provider's streaming client assembles a reply. A reader of a live run uses it to show a reply as it grows.
 */
export const foldDeltas = (deltas: Iterable<ModelDelta>): { readonly text: string; readonly toolCalls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly arguments: string }> } => {
  let text = ""
  const calls = new Map<number, { id: string; name: string; arguments: string }>()
  for (const d of deltas) {
    if (d._tag === "TextDelta") {
      text += d.text
      continue
    }
    const call = calls.get(d.index) ?? { id: "", name: "", arguments: "" }
    calls.set(d.index, call)
    if (d.id !== undefined) call.id = d.id
    if (d.name !== undefined) call.name = d.name
    call.arguments += d.arguments
  }
  return { text, toolCalls: [...calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => c) }
}

/** A layer providing `ModelPort` from a provider's options. */
export const layer = (options: ProviderOptions): Layer.Layer<ModelPort> => Layer.succeed(ModelPort, make(options))
