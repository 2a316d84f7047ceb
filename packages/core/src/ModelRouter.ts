/**
 * A `ModelPort` that routes each call by the model it names: `{ "claude-*": anthropic, "gpt-*": openai }`. A workflow
 * or an agent picks the model per call (`ctx.chat({ model })`, an agent's `model`), and the router hands the call to
 * the port that serves it, streamed or not. The kernel logs the model asked for (`ModelRequested.model`) and the model
 * that answered (`ModelCompleted.model`), prices the call by the latter with all the ports' price tables, and a replay
 * reads the log, calling no port.
 *
 * @example
 * const model = ModelRouter.layer({
 *   "claude-*": AnthropicModel.layer({ defaultModel: "claude-haiku-4-5" }),
 *   "gpt-*": OpenAiModel.layer({ defaultModel: "gpt-4o-mini" })
 * }, { defaultModel: "gpt-4o-mini" })
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { ModelError } from "./Errors.js"
import * as ModelPort from "./ModelPort.js"
import type { PriceTable } from "./Pricing.js"

/**
 * Ports by the models they serve: an exact model name (`gpt-4o`), a prefix ending in `*` (`claude-*`), or `*` (every
 * other model). An exact name wins over a prefix, a longer prefix over a shorter one, and `*` comes last.
 */
export type Routes<S> = Readonly<Record<string, S>>

export interface Options {
  /** The model a request names when it names none. Default: the first route's port's `defaultModel`. */
  readonly defaultModel?: string | undefined
}

const isPattern = (route: string): boolean => route.endsWith("*")

/** The route serving `model`: exact, else the longest matching prefix, else `*`; undefined when none does. */
export const routeOf = (routes: ReadonlyArray<string>, model: string): string | undefined => {
  if (routes.includes(model) && !isPattern(model)) return model
  let best: string | undefined
  for (const route of routes) {
    if (!isPattern(route) || !model.startsWith(route.slice(0, -1))) continue
    if (best === undefined || route.length > best.length) best = route
  }
  return best
}

/**
 * The ports as one. Each call goes to the port its model routes to, unchanged; a model no route serves fails the call
 * (`bad_request`, naming the routes) before any request. The reply carries a `routed` note (`{ model, route }`) that
 * the kernel logs with the step. Tokens are counted by the routed port; the prices are all the ports' (the first
 * route's winning where two price one model).
 */
export const make = (routes: Routes<ModelPort.Service>, options: Options = {}): ModelPort.Service => {
  const entries = Object.entries(routes)
  const first = entries[0]
  if (first === undefined) throw new Error("ModelRouter.make: give at least one route")
  const names = entries.map(([route]) => route)
  let prices: PriceTable = {}
  for (const [, port] of [...entries].reverse()) prices = { ...prices, ...port.prices }

  const portOf = (model: string): Effect.Effect<{ readonly route: string; readonly port: ModelPort.Service }, ModelError> => {
    const route = routeOf(names, model)
    return route === undefined
      ? Effect.fail(new ModelError({
        kind: "bad_request",
        reason: `no model route serves "${model}"; the routes are ${names.map((n) => `"${n}"`).join(", ")} (add one, or a "*" route)`,
        retryable: false
      }))
      : Effect.succeed({ route, port: routes[route]! })
  }
  const noted = (response: ModelPort.ModelResponse, model: string, route: string): ModelPort.ModelResponse => ({
    ...response,
    notes: [{ source: "router", note: "routed", data: { model, route } }, ...(response.notes ?? [])]
  })

  return ModelPort.make({
    defaultModel: options.defaultModel ?? first[1].defaultModel,
    prices,
    generate: Effect.fn("ModelRouter.generate")(function*(request: ModelPort.ModelRequest) {
      const { port, route } = yield* portOf(request.model)
      return noted(yield* port.generate(request), request.model, route)
    }),
    streamTo: (request, sink) =>
      Effect.flatMap(portOf(request.model), ({ port, route }) =>
        Effect.map(port.streamTo(request, sink), (response) => noted(response, request.model, route))),
    // The routed port's, when it hands calls on (a fallback); a model no route serves is refused before any call.
    answeredBy: (model) => {
      const route = routeOf(names, model)
      return (route === undefined ? undefined : routes[route]!.answeredBy?.(model)) ?? [model]
    },
    billsEach: (model) => {
      const route = routeOf(names, model)
      return route !== undefined && routes[route]!.billsEach?.(model) === true
    },
    countTokens: (messages, model) => {
      const route = routeOf(names, model)
      const port = route === undefined ? undefined : routes[route]
      return port === undefined ? Effect.succeed(ModelPort.approximateTokens(messages)) : port.countTokens(messages, model)
    }
  })
}

/**
 * A layer providing the router, from the layers of its ports (each built on its own, so two adapters that both provide
 * `ModelPort` do not overwrite each other).
 */
export const layer = <E, R>(routes: Routes<Layer.Layer<ModelPort.ModelPort, E, R>>, options: Options = {}): Layer.Layer<ModelPort.ModelPort, E, R> =>
  Layer.scoped(
    ModelPort.ModelPort,
    Effect.gen(function*() {
      const built: Record<string, ModelPort.Service> = {}
      for (const [route, l] of Object.entries(routes)) built[route] = Context.get(yield* Layer.build(l), ModelPort.ModelPort)
      return make(built, options)
    })
  )
