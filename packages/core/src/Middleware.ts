/**
 * Middleware: one ordered chain of interceptors around every model call and tool call. Each may rewrite the
 * call, deny it (`PolicyDenied`), stop the run (`BudgetExceeded`), and write notes into the log. The order
 * is the order of the list given to `Middleware.layer`, visible in user code:
 *
 * ```ts
 * Middleware.layer([piiScrubber, quota, capabilityGuard])
 * ```
 *
 * `before*` hooks run first to last; `after*` hooks run last to first (an onion, like HTTP middleware).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { BudgetExceeded, PolicyDenied, ToolError } from "./Errors.js"
import type { AssistantMessage, ChatMessage } from "./Chat.js"
import type { Json } from "./Json.js"
import type { ModelDelta, ModelRequest, ModelResponse } from "./ModelPort.js"
import type { TenantContext } from "./Tenant.js"

/** What an interceptor knows about the call it wraps. */
export interface CallContext {
  readonly runId: string
  readonly rootRunId: string
  readonly tenant: TenantContext
  readonly stepKey: string
  /** USD spent so far by the run's whole lineage (root run and sub-runs). */
  readonly spentUsd: number
  /** Writes a `MiddlewareNote` into the log, in the same batch as the call's events. */
  readonly note: (middleware: string, note: string, data: Json) => Effect.Effect<void>
}

/** What an interceptor knows about a logged model call a replay passed (nothing is written during a replay). */
export interface ReplayContext {
  readonly runId: string
  readonly rootRunId: string
  readonly tenant: TenantContext
  readonly stepKey: string
}

/** A model call the log holds, as a replay passes it: the request the code built now, and what the log says of it. */
export interface ReplayedModelCall {
  /** The request as the code built it (before the chain): the same call, its hash checked against the log. */
  readonly request: ModelRequest
  /** The messages the model was sent, as logged (`ModelRequested`): what the chain made of `request.messages`. */
  readonly sent: ReadonlyArray<ChatMessage>
  /** The reply as logged (`ModelCompleted`, what the `afterModel` hooks left); undefined when the call ended otherwise. */
  readonly reply: AssistantMessage | undefined
}

/** A tool call as middleware sees it: the tool, its capability and the arguments as JSON text. */
export interface ToolCallInfo {
  readonly tool: string
  readonly requiresCapability: string | undefined
  readonly arguments: string
}

/**
 * What a middleware does to the deltas of one streamed call: `push` takes a delta and returns what to pass on now (it
 * may hold text back: a value that may go on in the next delta), `flush` returns what it still holds when the reply
 * ends. What the passed deltas spell must be what `afterModel` makes of the whole reply, which stays the logged truth.
 */
export interface DeltaHook {
  readonly push: (delta: ModelDelta) => ReadonlyArray<ModelDelta>
  readonly flush: () => ReadonlyArray<ModelDelta>
}

/** Errors an interceptor may fail with. */
export type InterceptorError = PolicyDenied | BudgetExceeded

export interface Interceptor {
  readonly name: string
  readonly beforeModel?: (request: ModelRequest, context: CallContext) => Effect.Effect<ModelRequest, InterceptorError>
  readonly afterModel?: (
    request: ModelRequest,
    response: ModelResponse,
    context: CallContext
  ) => Effect.Effect<ModelResponse, InterceptorError>
  /** Called once per streamed model call, after `beforeModel`: the hook its deltas pass through, in the chain's order. */
  readonly modelDeltas?: (request: ModelRequest, context: CallContext) => Effect.Effect<DeltaHook>
  /**
   * Called for each model call a replay (a resume, a recovery, a fork's first execution) takes from the
   * log instead of making it: for a middleware whose state in memory was built by its hooks on the first execution
   * (the PII scrubber's numbering), to build it again from what the log says. Calls come as the replayed code reaches them (concurrent
   * branches in any order). Synchronous, and may not fail: a replay
   * writes nothing. Not called for calls made live.
   */
  readonly replayedModel?: (call: ReplayedModelCall, context: ReplayContext) => void
  readonly beforeTool?: (call: ToolCallInfo, context: CallContext) => Effect.Effect<ToolCallInfo, InterceptorError>
  readonly afterTool?: (call: ToolCallInfo, result: Json, context: CallContext) => Effect.Effect<Json, InterceptorError | ToolError>
}

export interface Service {
  readonly interceptors: ReadonlyArray<Interceptor>
}

/** The middleware chain. A kernel without this service runs no middleware. */
export class Middleware extends Context.Tag("@artana/core/Middleware")<Middleware, Service>() {}

/**
 * The chain, in the order given. An entry may be an interceptor, or an Effect that builds one from services
 * (a quota middleware reads the ModelPort's tokenizer, a policy middleware its rules).
 */
export const layer = <R = never>(
  entries: ReadonlyArray<Interceptor | Effect.Effect<Interceptor, never, R>>
): Layer.Layer<Middleware, never, R> =>
  Layer.effect(
    Middleware,
    Effect.map(Effect.forEach(entries, (e) => (Effect.isEffect(e) ? e : Effect.succeed(e))), (interceptors) => ({ interceptors }))
  )

/** No middleware. */
export const layerEmpty: Layer.Layer<Middleware> = layer([])
