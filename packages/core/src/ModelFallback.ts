/**
 * A `ModelPort` that falls back: each call goes to the first model; when it fails with one of the listed kinds (a rate
 * limit, an outage), the next one answers, and so on. The kernel logs the model that actually answered
 * (`ModelCompleted.model`) and prices the call by it; a `fallback` note in the log says which model failed and why.
 * Replay reads the log, so a replayed run never calls any of them.
 *
 * @example
 * const model = ModelFallback.layer([OpenAiModel.layer({ defaultModel: "gpt-4o-mini" }), AnthropicModel.layer({ defaultModel: "claude-haiku-4-5" })], {
 *   on: ["rate_limited", "unavailable"]
 * })
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { ModelError } from "./Errors.js"
import * as ModelPort from "./ModelPort.js"
import type { PriceTable } from "./Pricing.js"

/** A failure that moves on to the next model: a `ModelError` kind, or `"unavailable"` (server error, timeout, connection). */
export type Trigger = ModelError["kind"] | "unavailable"

export interface Options {
  /** The failures that fall back. Default `["rate_limited", "unavailable"]`; any other failure fails the call at once. */
  readonly on?: ReadonlyArray<Trigger> | undefined
}

const UNAVAILABLE: ReadonlyArray<ModelError["kind"]> = ["server_error", "timeout", "connection"]

const kindsOf = (on: ReadonlyArray<Trigger>): ReadonlySet<ModelError["kind"]> =>
  new Set(on.flatMap((t) => (t === "unavailable" ? UNAVAILABLE : [t])))

/**
 * The models, first to last, as one port. The first gets each request as the kernel built it; a later one gets it
 * with its own `defaultModel` (a model name of one provider means nothing to another). The port's default model and
 * token counter are the first's (the kernel's pre-call estimate is made for it); its prices are all of theirs, the
 * first's winning, so the call is priced by the model that answered.
 */
export const make = (models: readonly [ModelPort.Service, ...Array<ModelPort.Service>], options: Options = {}): ModelPort.Service => {
  const [primary] = models
  const kinds = kindsOf(options.on ?? ["rate_limited", "unavailable"])
  let prices: PriceTable = {}
  for (const m of [...models].reverse()) prices = { ...prices, ...m.prices }

  // Model `i` answers the request, or hands it on to model `i + 1` with a `fallback` note.
  const attempt = (
    i: number,
    model: ModelPort.Service,
    request: ModelPort.ModelRequest,
    notes: ReadonlyArray<ModelPort.ProviderNote>,
    failed: ReadonlyArray<string>
  ): Effect.Effect<ModelPort.ModelResponse, ModelError> =>
    Effect.gen(function*() {
      const sent = i === 0 ? request : { ...request, model: model.defaultModel }
      const result = yield* Effect.either(model.generate(sent))
      if (result._tag === "Right") {
        const response = result.right
        return notes.length === 0 ? response : { ...response, notes: [...notes, ...(response.notes ?? [])] }
      }
      const error = result.left
      const next = models[i + 1]
      if (next !== undefined && kinds.has(error.kind)) {
        const note = { from: sent.model, to: next.defaultModel, kind: error.kind, reason: error.reason }
        return yield* attempt(i + 1, next, request, [...notes, { source: "fallback", note: "fallback", data: note }], [
          ...failed,
          `"${sent.model}" (${error.kind})`
        ])
      }
      if (failed.length === 0) return yield* error
      return yield* new ModelError({
        kind: error.kind,
        reason: `${error.reason} (after falling back from ${failed.join(", ")})`,
        retryable: error.retryable,
        ...(error.cause === undefined ? {} : { cause: error.cause })
      })
    })

  const generate = Effect.fn("ModelFallback.generate")((request: ModelPort.ModelRequest) => attempt(0, primary, request, [], []))

  return ModelPort.make({
    defaultModel: primary.defaultModel,
    prices,
    generate,
    countTokens: (messages, model) => primary.countTokens(messages, model)
  })
}

/**
 * A layer providing the fallback port, from the layers of its models (each built on its own, so two adapters that
 * both provide `ModelPort` do not overwrite each other).
 */
export const layer = <E, R>(
  models: readonly [Layer.Layer<ModelPort.ModelPort, E, R>, ...Array<Layer.Layer<ModelPort.ModelPort, E, R>>],
  options: Options = {}
): Layer.Layer<ModelPort.ModelPort, E, R> =>
  Layer.scoped(
    ModelPort.ModelPort,
    Effect.gen(function*() {
      const [first, ...rest] = models
      const port = (l: Layer.Layer<ModelPort.ModelPort, E, R>) => Effect.map(Layer.build(l), Context.get(ModelPort.ModelPort))
      const head = yield* port(first)
      const tail = yield* Effect.forEach(rest, port)
      return make([head, ...tail], options)
    })
  )
