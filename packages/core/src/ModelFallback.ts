/**
 * A `ModelPort` that falls back: each call goes to the first model; when it fails with one of the listed kinds (a rate
 * limit, an outage), the next one answers, and so on. The kernel logs the model that actually answered
 * (`ModelCompleted.model`) and prices the call by it; a `fallback` note in the log says which model failed and why,
 * and what it billed when it answered before failing (a refused reply: `billed`, charged at its own price).
 * Replay reads the log, so a replayed run never calls any of them. A streamed call (`stream`, what the kernel uses)
 * falls back the same way until the first delta; after it, a failure fails the call (the deltas are out).
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
 * first's winning, so the call is priced by the model that answered. Its `answeredBy` names every model a call may
 * end at, so the kernel's pre-call estimate is the dearest of them.
 */
export const make = (models: readonly [ModelPort.Service, ...Array<ModelPort.Service>], options: Options = {}): ModelPort.Service => {
  const [primary] = models
  const kinds = kindsOf(options.on ?? ["rate_limited", "unavailable"])
  // A failure that may come with a bill (a reply the model answered and refused: anything but a rate limit or an
  // outage) is handed on with its cost, so each model of the chain may bill the call.
  const billing = [...kinds].some((kind) => kind !== "rate_limited" && !UNAVAILABLE.includes(kind))
  let prices: PriceTable = {}
  for (const m of [...models].reverse()) prices = { ...prices, ...m.prices }

  const sentTo = (i: number, model: ModelPort.Service, request: ModelPort.ModelRequest): ModelPort.ModelRequest =>
    i === 0 ? request : { ...request, model: model.defaultModel }

  // The fallback, if model `i` failed with `error` and the next model is to get the call: its note.
  const handOn = (i: number, sent: ModelPort.ModelRequest, error: ModelError): ModelPort.ProviderNote | undefined => {
    const next = models[i + 1]
    if (next === undefined || !kinds.has(error.kind)) return undefined
    // What the failed model billed (a reply it refused), charged to the run by the kernel at that model's price.
    const billed = error.usage === undefined ? {} : {
      billed: {
        inputTokens: error.usage.inputTokens,
        outputTokens: error.usage.outputTokens,
        ...(error.usage.cachedInputTokens === undefined ? {} : { cachedInputTokens: error.usage.cachedInputTokens })
      }
    }
    return { source: "fallback", note: "fallback", data: { from: sent.model, to: next.defaultModel, kind: error.kind, reason: error.reason, ...billed } }
  }

  // The last failure, naming the models that failed before it.
  const finalError = (error: ModelError, failed: ReadonlyArray<string>): ModelError =>
    failed.length === 0 ? error : new ModelError({
      kind: error.kind,
      reason: `${error.reason} (after falling back from ${failed.join(", ")})`,
      retryable: error.retryable,
      ...(error.cause === undefined ? {} : { cause: error.cause })
    })

  const withNotes = (response: ModelPort.ModelResponse, notes: ReadonlyArray<ModelPort.ProviderNote>): ModelPort.ModelResponse =>
    notes.length === 0 ? response : { ...response, notes: [...notes, ...(response.notes ?? [])] }

  // Model `i` answers the request, or hands it on to model `i + 1` with a `fallback` note.
  const attempt = (
    i: number,
    request: ModelPort.ModelRequest,
    notes: ReadonlyArray<ModelPort.ProviderNote>,
    failed: ReadonlyArray<string>
  ): Effect.Effect<ModelPort.ModelResponse, ModelError> =>
    Effect.gen(function*() {
      const model = models[i]!
      const sent = sentTo(i, model, request)
      const result = yield* Effect.either(model.generate(sent))
      if (result._tag === "Right") return withNotes(result.right, notes)
      const note = handOn(i, sent, result.left)
      if (note === undefined) return yield* finalError(result.left, failed)
      return yield* attempt(i + 1, request, [...notes, note], [...failed, `"${sent.model}" (${result.left.kind})`])
    })

  // The same, streamed. A model that fails before its first delta hands the call on, as `generate` does; once a delta
  // is out (readers of the live run have seen it), a failure is the call's: another model's answer would follow a
  // half answer of this one.
  const streamed = (
    i: number,
    request: ModelPort.ModelRequest,
    notes: ReadonlyArray<ModelPort.ProviderNote>,
    failed: ReadonlyArray<string>,
    sink: ModelPort.DeltaSink
  ): Effect.Effect<ModelPort.ModelResponse, ModelError> =>
    Effect.suspend(() => {
      const model = models[i]!
      const sent = sentTo(i, model, request)
      let started = false
      // Says which model streams (a nested fallback's own answer wins): the kernel prices the stream's stop at it.
      const onward: ModelPort.DeltaSink = (deltas, from) => {
        started = true
        return sink(deltas, from ?? sent.model)
      }
      return model.streamTo(sent, onward).pipe(
        Effect.map((response) => withNotes(response, notes)),
        Effect.catchAll((error) => {
          const note = started ? undefined : handOn(i, sent, error)
          if (note === undefined) return Effect.fail(finalError(error, failed))
          return streamed(i + 1, request, [...notes, note], [...failed, `"${sent.model}" (${error.kind})`], sink)
        })
      )
    })

  const generate = Effect.fn("ModelFallback.generate")((request: ModelPort.ModelRequest) => attempt(0, request, [], []))

  return ModelPort.make({
    defaultModel: primary.defaultModel,
    prices,
    answeredBy: (model) => answeredBy(models, model),
    billsEach: (model) => billing || models.some((port, i) => port.billsEach?.(i === 0 ? model : port.defaultModel) === true),
    generate,
    streamTo: (request, sink) => streamed(0, request, [], [], sink),
    countTokens: (messages, model) => primary.countTokens(messages, model)
  })
}

/**
 * The models a call for `model` may end at: the first model's (itself a fallback, or a router, naming its own), then
 * each later model's default (the model it is sent as), once each.
 */
const answeredBy = (models: ReadonlyArray<ModelPort.Service>, model: string): ReadonlyArray<string> => {
  const named = models.flatMap((port, i) => {
    const sent = i === 0 ? model : port.defaultModel
    return port.answeredBy?.(sent) ?? [sent]
  })
  return [...new Set(named)]
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
