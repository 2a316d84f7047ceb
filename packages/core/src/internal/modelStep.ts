/**
 * The model step: a recorded call returns its logged result or error (`modelRecorded.ts`); a new one is priced
 * against the lineage's budget (`modelBudget.ts`), passed through the middleware chain, sent, priced again by what
 * it cost, and logged as one batch.
 */
import * as Effect from "effect/Effect"
import type { AssistantMessage, Usage } from "../Chat.js"
import * as Errors from "../Errors.js"
import type { EventPayload } from "../Event.js"
import type { CallContext, InterceptorError } from "../Middleware.js"
import type * as ModelPort from "../ModelPort.js"
import * as Interceptors from "./interceptors.js"
import { type Assumed, chargedCost, checkBudget, estimatePrice, failed, overBudgetOf, passedOverCost, UNPRICED } from "./modelBudget.js"
import { recordedCall, type Seen } from "./modelRecorded.js"
import { requestedOf } from "./modelRequested.js"
import { billedRetry } from "./retrying.js"
import * as ModelStream from "./modelStream.js"
import * as RequestHash from "./requestHash.js"
import type { StepEnv } from "./stepEnv.js"
import * as Tracing from "./tracing.js"
import type { Price } from "../Pricing.js"

export interface ModelCall {
  readonly message: AssistantMessage
  readonly usage: Usage
  readonly costUsd: number
}

/**
 * Ends the step on a refusal of the middleware chain: a budget stop, or a denial logged with the call. `costUsd`: what
 * the call was billed, when the refusal came after it (charged to the run, and logged with the refusal).
 */
const refused = (env: StepEnv, key: string, phase: "before_call" | "after_call", before: ReadonlyArray<EventPayload>, error: InterceptorError, middleware: string, costUsd = 0) => {
  env.spend(costUsd)
  const billed = costUsd > 0 ? { costUsd } : {}
  return error._tag === "BudgetExceeded"
    ? env.budgetExceeded(key, phase, before, costUsd)
    : Effect.zipRight(env.append(key, [...before, { _tag: "PolicyDenied", tool: "model", reason: error.reason, middleware, ...billed }]), Effect.fail(error))
}

/**
 * What a call that failed was billed, as far as is known: the usage its error reports (a reply refused as malformed),
 * else, once it streamed output, its prompt and that output (4 characters a token). Unknown (nothing streamed, no
 * usage, or no price): 0.
 */
const failedCost = (env: StepEnv, sent: ModelPort.ModelRequest, error: Errors.ModelError, outputChars: number, promptTokens: number | undefined, price: Price | undefined): number => {
  const usage = error.usage ?? (outputChars > 0 && promptTokens !== undefined ? { inputTokens: promptTokens, outputTokens: Math.ceil(outputChars / 4) } : undefined)
  if (usage === undefined) return 0
  const cost = chargedCost(env, sent, { model: sent.model, message: { role: "assistant", content: "" }, usage }, price)
  return cost !== undefined && Number.isFinite(cost) ? cost : 0
}

/** A call the log does not hold: priced, passed through the chain, sent (streamed), charged and logged. */
const liveCall = (env: StepEnv, key: string, request: ModelPort.ModelRequest, requestHash: string) =>
  Effect.gen(function*() {
    const { deps, tenant } = env
    // The lineage's spend, read again before every call: sub-runs of the same root (a tool's, or running beside this
    // one) spend on the same budget.
    if (env.options.lineageSpend !== undefined) env.rereadSpend(yield* Effect.catchAll(env.options.lineageSpend, (error) => env.fault(error)))
    if (deps.enforceBudget && env.spentUsd() >= tenant.budgetUsdLimit) return yield* env.budgetExceeded(key, "before_call", [])
    const notes: Array<EventPayload> = []
    const context = env.callContext(key, notes)
    const before = yield* Interceptors.run(deps.interceptors, "before", request, (i) =>
      i.beforeModel === undefined ? undefined : (r) => i.beforeModel!(r, context))
    if (before._tag === "Refused") return yield* refused(env, key, "before_call", [requestedOf(before.value, requestHash), ...notes], before.error, before.interceptor.name)
    // Nothing is held or sent in the name of a run this execution may no longer own (its caller's lease ran out, or was
    // lost): a hold is its call's, so a stale execution's hold would replace the new owner's while that one's call is
    // in flight, and leave the lineage's other calls room that call will spend.
    yield* env.checkOwnership(`(the call to model "${before.value.model}" would have been sent)`)
    const price = deps.priceOf(before.value.model)
    // Estimated at the dearest model the call may end at (a fallback's), charged at the price of the one that answers.
    const estimated = estimatePrice(env, before.value.model, price)
    // The estimate is held for the lineage while the call is in flight, released however the call ends: from the hold
    // (made where the check passes) to the release's registration nothing can be interrupted; the token count before
    // the check, a store's hold (which lapses on its own) and the call itself can.
    return yield* Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(
        checkBudget(env, key, before.value, estimated, requestedOf(before.value, requestHash), notes, restore),
        (assumed) => Effect.ensuring(restore(sendAndCharge(env, key, before.value, requestHash, price, estimated, assumed, notes, context)), assumed?.release ?? Effect.void)
      ))
  })

/**
 * A stream's stop (`overBudgetOf`) at the price of the model streaming, when the port says which (a fallback's later
 * model, charged at its own price), else at the price the call was estimated at.
 */
const stopsByModel = (env: StepEnv, assumed: Assumed | undefined, price: Price | undefined, estimated: Price | undefined, requested: string) => {
  const stops = new Map<string | undefined, (outputChars: number, outputText: () => string) => number | undefined>()
  return (outputChars: number, model: string | undefined, outputText: () => string): number | undefined => {
    let stop = stops.get(model)
    if (stop === undefined) {
      stop = overBudgetOf(env, assumed, model === undefined ? estimated : env.deps.priceOf(model) ?? price, model ?? requested)
      stops.set(model, stop)
    }
    return stop(outputChars, outputText)
  }
}

/** A priced, checked call: sent (streamed), charged and logged. */
const sendAndCharge = (
  env: StepEnv,
  key: string,
  request: ModelPort.ModelRequest,
  requestHash: string,
  price: Price | undefined,
  /** The price the call was estimated at (`estimatePrice`): its stream is stopped by it unless it says its model. */
  estimated: Price | undefined,
  assumed: Assumed | undefined,
  notes: Array<EventPayload>,
  context: CallContext
) =>
  Effect.gen(function*() {
    const { deps, tenant } = env
    // The reply may not cost more than the estimate: the output tokens it assumed are sent as the model's cap.
    const sent = assumed === undefined || request.maxOutputTokens !== undefined ? request : { ...request, maxOutputTokens: assumed.outputTokens }
    const requested = requestedOf(sent, requestHash)
    // Nothing is sent in the name of a run this execution may no longer own (its caller's lease ran out, or was lost).
    yield* env.checkOwnership(`(the call to model "${sent.model}" would have been sent)`)
    const call = ModelStream.run(env, key, sent, context, stopsByModel(env, assumed, price, estimated, sent.model))
    // An adapter asks again after a billed, refused reply only once another attempt is held (`callHolds.ts`).
    const streamed = yield* (assumed === undefined ? call : Effect.locally(call, billedRetry, assumed.holds.reAsk))
    if (streamed._tag === "OverBudget") {
      // The stopped stream's cost is the run's (and its lineage's): logged on the stop, not only kept in memory.
      const stoppedAt = Number.isFinite(streamed.costUsd) ? streamed.costUsd : 0
      env.spend(stoppedAt)
      const note: EventPayload = { _tag: "MiddlewareNote", middleware: "kernel", note: "stream_stopped", data: { outputChars: streamed.outputChars, estimateUsd: Number.isFinite(streamed.costUsd) ? streamed.costUsd : null } }
      return yield* env.budgetExceeded(key, "during_call", [requested, ...notes, note], stoppedAt)
    }
    if (streamed._tag === "Failed") {
      yield* Tracing.annotate(() => ({ "error.type": streamed.error.kind }))
      const costUsd = failedCost(env, sent, streamed.error, streamed.outputChars, assumed?.promptTokens, price)
      env.spend(costUsd)
      yield* env.append(key, [requested, ...notes, { _tag: "ModelFailed", kind: streamed.error.kind, error: streamed.error.reason, ...(costUsd > 0 ? { costUsd } : {}) }])
      return yield* Effect.fail(streamed.error)
    }
    const after = yield* Interceptors.run(deps.interceptors, "after", streamed.response, (i) =>
      i.afterModel === undefined ? undefined : (r) => i.afterModel!(sent, r, context))
    if (after._tag === "Refused") {
      // The provider answered (and billed) before the middleware refused the reply: the run is charged for it.
      const billed = chargedCost(env, sent, streamed.response, price)
      return yield* refused(env, key, "after_call", [requested, ...notes], after.error, after.interceptor.name, billed !== undefined && Number.isFinite(billed) ? billed : 0)
    }
    const response = after.value
    const answered = chargedCost(env, sent, response, price)
    const passedOver = passedOverCost(env, response, price)
    const costUsd = answered === undefined || passedOver === undefined ? undefined : answered + passedOver
    if (costUsd === undefined) {
      const why = `the call to model "${response.model}" reported a cost or usage that is not one (cost ${String(response.costUsd)}, usage ${JSON.stringify(response.usage)})`
      yield* env.append(key, [requested, ...notes, { _tag: "ModelFailed", kind: UNPRICED, error: why }])
      return yield* failed(env, new Errors.BudgetUnpriced({ runId: env.runId, model: response.model }))
    }
    env.spend(costUsd)
    yield* Tracing.annotate(() => ({
      "gen_ai.request.model": sent.model,
      "gen_ai.response.model": response.model,
      "gen_ai.usage.input_tokens": response.usage.inputTokens,
      "gen_ai.usage.output_tokens": response.usage.outputTokens,
      "artana.cost_usd": costUsd
    }))
    yield* Tracing.annotateContent(() => ({ "gen_ai.input.messages": Tracing.json(sent.messages), "gen_ai.output.messages": Tracing.json([response.message]) }))
    for (const n of response.notes ?? []) notes.push({ _tag: "MiddlewareNote", middleware: n.source, note: n.note, data: n.data })
    const payloads: Array<EventPayload> = [
      requested,
      ...notes,
      { _tag: "ModelCompleted", model: response.model, message: response.message, usage: response.usage, costUsd }
    ]
    if (deps.enforceBudget && env.spentUsd() > tenant.budgetUsdLimit) return yield* env.budgetExceeded(key, "after_call", payloads)
    yield* env.append(key, payloads)
    return { message: response.message, usage: response.usage, costUsd } satisfies ModelCall
  })

/** The middleware's `replayedModel` hooks, told of the logged call at `key` of `request`; undefined when none has one. */
const replayHooks = (env: StepEnv, key: string, request: ModelPort.ModelRequest): Seen | undefined => {
  const hooks = env.deps.interceptors.filter((i) => i.replayedModel !== undefined)
  if (hooks.length === 0) return undefined
  const context = { runId: env.runId, rootRunId: env.options.rootRunId, tenant: env.tenant, stepKey: key }
  return (sent, reply) => {
    for (const i of hooks) i.replayedModel!({ request, sent, reply }, context)
  }
}

/**
 * The model step of an execution: one call under `explicitKey` (else the next `model:<n>`), recorded or run live. Begun
 * when called: call it as the step runs (inside an effect); a recorded result comes back as an `Exit` (`answered.ts`).
 */
export const make = (env: StepEnv) => (request: ModelPort.ModelRequest, explicitKey?: string | undefined): Effect.Effect<ModelCall, Errors.ModelError | Errors.PolicyDenied | InterceptorError> => {
  const halted = env.halted()
  if (halted !== undefined) return env.halt(halted)
  const key = env.cursor.nextKey("model", explicitKey)
  // The request's hash is computed where it is used: a recorded call computes it in one pass with the comparison of
  // its stored text (`recordedCall`).
  return env.answer(
    key,
    () => `a model call (request ${RequestHash.requestHash(request).slice(0, 12)})`,
    (events) => recordedCall(env, key, events, request, replayHooks(env, key, request)),
    () =>
      Tracing.span(
        "artana.model",
        { "gen_ai.operation.name": "chat", "gen_ai.request.model": request.model, "artana.step_key": key },
        liveCall(env, key, request, RequestHash.requestHash(request, env.renders))
      )
  )
}
