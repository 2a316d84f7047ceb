/**
 * The model step: a recorded call returns its logged result (or error); a new one is priced against the lineage's
 * budget, passed through the middleware chain, sent, priced again by what it cost, and logged as one batch.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { AssistantMessage, Usage } from "../Chat.js"
import * as Errors from "../Errors.js"
import type { Event, EventPayload } from "../Event.js"
import type { InterceptorError } from "../Middleware.js"
import type * as ModelPort from "../ModelPort.js"
import { costOf, type Price } from "../Pricing.js"
import * as RequestHash from "./requestHash.js"
import * as Interceptors from "./interceptors.js"
import * as ModelStream from "./modelStream.js"
import type { StepEnv } from "./stepEnv.js"
import * as Tracing from "./tracing.js"

/** `ModelFailed.kind` of a call refused because nothing prices its model. */
const UNPRICED = "budget_unpriced"

export interface ModelCall {
  readonly message: AssistantMessage
  readonly usage: Usage
  readonly costUsd: number
}

const failed = (env: StepEnv, error: Errors.BudgetExceeded | Errors.BudgetUnpriced) => env.halt({ _tag: "Failed", error })

/** A call the log holds: its result, or the error it ended with. */
const recordedCall = (env: StepEnv, key: string, recorded: ReadonlyArray<Event>, requestHash: string): Effect.Effect<ModelCall, Errors.ModelError | Errors.PolicyDenied> => {
  const first = recorded[0]!.payload
  const runId = env.runId
  if (first._tag === "BudgetExceeded") return failed(env, new Errors.BudgetExceeded({ runId, limitUsd: first.limitUsd, spentUsd: first.spentUsd }))
  if (first._tag !== "ModelRequested" || first.requestHash !== requestHash) {
    return env.mismatch(key, recorded, `a model call (request ${requestHash.slice(0, 12)})`)
  }
  for (const e of recorded) {
    const p = e.payload
    if (p._tag === "PolicyDenied") return Effect.fail(new Errors.PolicyDenied({ tool: "model", reason: p.reason }))
    if (p._tag === "BudgetExceeded") return failed(env, new Errors.BudgetExceeded({ runId, limitUsd: p.limitUsd, spentUsd: p.spentUsd }))
  }
  const completed = recorded.find((e) => e.payload._tag === "ModelCompleted")?.payload
  if (completed?._tag === "ModelCompleted") return Effect.succeed({ message: completed.message, usage: completed.usage, costUsd: completed.costUsd })
  const modelFailed = recorded.find((e) => e.payload._tag === "ModelFailed")?.payload
  if (modelFailed?._tag === "ModelFailed" && modelFailed.kind === UNPRICED) return failed(env, new Errors.BudgetUnpriced({ runId, model: first.model }))
  const kind = modelFailed?._tag === "ModelFailed" ? Schema.decodeUnknownOption(Errors.ModelError.fields.kind)(modelFailed.kind) : undefined
  return Effect.fail(new Errors.ModelError({
    kind: kind?._tag === "Some" ? kind.value : "unknown",
    reason: modelFailed?._tag === "ModelFailed" ? modelFailed.error : "the logged model call has no result",
    retryable: false
  }))
}

/** The cost a response is charged: the adapter's (or a middleware's) when it is one, else its usage at its price. */
const chargedCost = (env: StepEnv, sent: ModelPort.ModelRequest, response: ModelPort.ModelResponse, price: Price | undefined): number | undefined => {
  // A cost the adapter reports wins when it is one (a finite, non-negative number); else the usage at the price of
  // the model that answered. Anything else (a negative or NaN cost, usage that is not a count of tokens) is no cost
  // the budget can hold: undefined, and the call is recorded as refused, like an unpriced one, and the run fails,
  // rather than a refund or a NaN switching the budget off.
  const answeredPrice = response.model === sent.model ? price : env.deps.priceOf(response.model) ?? price
  const reported = response.costUsd
  return reported !== undefined
    ? (Number.isFinite(reported) && reported >= 0 ? reported : undefined)
    : answeredPrice === undefined
    ? (env.deps.enforceBudget ? undefined : 0)
    : costOf(response.usage, answeredPrice)
}

export const make = (env: StepEnv) => {
  const { deps, tenant, runId } = env

  /** Ends the step on a refusal of the middleware chain: a budget stop, or a denial logged with the call. */
  const refused = (key: string, phase: "before_call" | "after_call", before: ReadonlyArray<EventPayload>, error: InterceptorError, middleware: string) =>
    error._tag === "BudgetExceeded"
      ? env.budgetExceeded(key, phase, before)
      : Effect.zipRight(env.append(key, [...before, { _tag: "PolicyDenied", tool: "model", reason: error.reason, middleware }]), Effect.fail(error))

  /**
   * Refuses a call the budget cannot hold (by its price, or its estimate); notes what the kernel decided. Returns the
   * output tokens the estimate assumed, when it made one.
   */
  const checkBudget = (key: string, sent: ModelPort.ModelRequest, price: Price | undefined, requested: EventPayload, notes: Array<EventPayload>) =>
    Effect.gen(function*() {
      if (!deps.enforceBudget) {
        notes.push({ _tag: "MiddlewareNote", middleware: "kernel", note: "budget_not_enforced", data: { limitUsd: tenant.budgetUsdLimit } })
        return
      }
      if (price === undefined) {
        // Refused before the request: a call that cannot be priced is never treated as free.
        yield* env.append(key, [requested, ...notes, { _tag: "ModelFailed", kind: UNPRICED, error: `no price is known for model "${sent.model}"` }])
        return yield* failed(env, new Errors.BudgetUnpriced({ runId, model: sent.model }))
      }
      if (!(price.input > 0 || price.output > 0)) return
      // The call's cost at most: the prompt as the model counts it, and every output token the request allows.
      const promptTokens = yield* deps.model.countTokens(sent.messages, sent.model)
      const outputTokens = sent.maxOutputTokens ?? deps.defaultMaxOutputTokens
      // A count the tokenizer cannot give is priced at the whole budget: refused, not waved through.
      const estimateUsd = costOf({ inputTokens: promptTokens, outputTokens }, price) ?? Number.POSITIVE_INFINITY
      const spentUsd = env.spentUsd()
      if (spentUsd + estimateUsd <= tenant.budgetUsdLimit) return { outputTokens, promptTokens }
      notes.push({
        _tag: "MiddlewareNote",
        middleware: "kernel",
        note: "estimate_over_budget",
        data: { model: sent.model, promptTokens, outputTokens, estimateUsd: Number.isFinite(estimateUsd) ? estimateUsd : null, spentUsd, limitUsd: tenant.budgetUsdLimit }
      })
      return yield* env.budgetExceeded(key, "before_call", [requested, ...notes])
    })

  const liveCall = (key: string, request: ModelPort.ModelRequest, requestHash: string) =>
    Effect.gen(function*() {
      // The lineage's spend, read again before every call: sub-runs of the same root (a tool's, or running beside this
      // one) spend on the same budget.
      if (env.options.lineageSpend !== undefined) env.rereadSpend(yield* Effect.catchAll(env.options.lineageSpend, (error) => env.fault(error)))
      if (deps.enforceBudget && env.spentUsd() >= tenant.budgetUsdLimit) return yield* env.budgetExceeded(key, "before_call", [])
      const notes: Array<EventPayload> = []
      const context = env.callContext(key, notes)
      const requestedOf = (sent: ModelPort.ModelRequest): EventPayload => ({
        _tag: "ModelRequested",
        model: sent.model,
        messages: sent.messages,
        tools: sent.tools.map((t) => t.name),
        requestHash,
        ...(sent.outputFormat === undefined ? {} : { outputSchema: sent.outputFormat.schema }),
        ...(sent.maxOutputTokens === undefined ? {} : { maxOutputTokens: sent.maxOutputTokens })
      })
      const before = yield* Interceptors.run(deps.interceptors, "before", request, (i) =>
        i.beforeModel === undefined ? undefined : (r) => i.beforeModel!(r, context))
      if (before._tag === "Refused") return yield* refused(key, "before_call", [requestedOf(before.value), ...notes], before.error, before.interceptor.name)
      const price = deps.priceOf(before.value.model)
      const assumed = yield* checkBudget(key, before.value, price, requestedOf(before.value), notes)
      // The reply may not cost more than the estimate: the output tokens it assumed are sent as the model's cap.
      const sent = assumed === undefined || before.value.maxOutputTokens !== undefined ? before.value : { ...before.value, maxOutputTokens: assumed.outputTokens }
      const requested = requestedOf(sent)
      // A server may stream past the cap: the output so far (4 characters a token) is priced as it comes.
      const overBudget = (outputChars: number): number | undefined => {
        if (assumed === undefined || price === undefined) return undefined
        const costUsd = costOf({ inputTokens: assumed.promptTokens, outputTokens: Math.ceil(outputChars / 4) }, price) ?? Number.POSITIVE_INFINITY
        return env.spentUsd() + costUsd > tenant.budgetUsdLimit ? costUsd : undefined
      }
      const streamed = yield* ModelStream.run(env, key, sent, context, overBudget)
      if (streamed._tag === "OverBudget") {
        env.spend(Number.isFinite(streamed.costUsd) ? streamed.costUsd : 0)
        const note: EventPayload = { _tag: "MiddlewareNote", middleware: "kernel", note: "stream_stopped", data: { outputChars: streamed.outputChars, estimateUsd: Number.isFinite(streamed.costUsd) ? streamed.costUsd : null } }
        return yield* env.budgetExceeded(key, "during_call", [requested, ...notes, note])
      }
      if (streamed._tag === "Failed") {
        yield* Tracing.annotate(() => ({ "error.type": streamed.error.kind }))
        yield* env.append(key, [requested, ...notes, { _tag: "ModelFailed", kind: streamed.error.kind, error: streamed.error.reason }])
        return yield* Effect.fail(streamed.error)
      }
      const after = yield* Interceptors.run(deps.interceptors, "after", streamed.response, (i) =>
        i.afterModel === undefined ? undefined : (r) => i.afterModel!(sent, r, context))
      if (after._tag === "Refused") return yield* refused(key, "after_call", [requested, ...notes], after.error, after.interceptor.name)
      const response = after.value
      const costUsd = chargedCost(env, sent, response, price)
      if (costUsd === undefined) {
        const why = `the call to model "${response.model}" reported a cost or usage that is not one (cost ${String(response.costUsd)}, usage ${JSON.stringify(response.usage)})`
        yield* env.append(key, [requested, ...notes, { _tag: "ModelFailed", kind: UNPRICED, error: why }])
        return yield* failed(env, new Errors.BudgetUnpriced({ runId, model: response.model }))
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

  /** One model call under `explicitKey` (else the next `model:<n>`): recorded, or run live. */
  return (request: ModelPort.ModelRequest, explicitKey?: string | undefined): Effect.Effect<ModelCall, Errors.ModelError | Errors.PolicyDenied | InterceptorError> =>
    Effect.suspend(() => {
      const halted = env.halted()
      if (halted !== undefined) return env.halt(halted)
      const key = env.cursor.nextKey("model", explicitKey)
      const requestHash = RequestHash.requestHash(request)
      return env.answer(
        key,
        () => `a model call (request ${requestHash.slice(0, 12)})`,
        (events) => recordedCall(env, key, events, requestHash),
        () => Tracing.span("artana.model", { "gen_ai.operation.name": "chat", "gen_ai.request.model": request.model, "artana.step_key": key }, liveCall(key, request, requestHash))
      )
    })
}
