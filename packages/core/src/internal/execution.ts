/**
 * One execution of a run: the code walks the loaded log; recorded steps return their logged results, new
 * steps run live and are appended. Kernel faults (a conflicting writer, a store failure, non-determinism)
 * and suspensions (a pause, an in-doubt tool) stop the execution through `halt`, which no user error
 * handler can swallow: `halted` is checked again when the code returns.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Random from "effect/Random"
import * as Schema from "effect/Schema"
import type * as Types from "effect/Types"
import type { ChatMessage, ToolCall, ToolMessage, Usage } from "../Chat.js"
import * as Errors from "../Errors.js"
import { type Event, type EventPayload, RUN_STEP_KEY, type WaitingOn } from "../Event.js"
import type * as EventStore from "../EventStore.js"
import type { Lease } from "../Lease.js"
import * as Json from "../Json.js"
import type { CallContext, Interceptor, ToolCallInfo } from "../Middleware.js"
import type * as ModelPort from "../ModelPort.js"
import { costOf, type Price } from "../Pricing.js"
import { hasCapability, type TenantContext } from "../Tenant.js"
import { firstIssue, jsonSchemaOf, type Tool } from "../Tool.js"
import type * as ToolRegistry from "../ToolRegistry.js"
import type {
  ChatError,
  ChatOptions,
  ChatResult,
  ModelStepError,
  ModelStepOptions,
  ModelStepResult,
  PauseOptions,
  ToolCallError,
  ToolCallOptions,
  ToolCallOutcome,
  WorkflowContext
} from "../Workflow.js"
import { canonicalJson, GENESIS_HASH, newEventHash, sha256 } from "./hash.js"
import { decodeExact } from "./exactGuard.js"

export interface Deps {
  readonly store: EventStore.Service
  readonly model: ModelPort.Service
  readonly tools: ToolRegistry.Service
  readonly interceptors: ReadonlyArray<Interceptor>
  readonly auditKey: string | undefined
  /** The price of a model (see `Pricing.resolver`), or undefined when nothing prices it. */
  readonly priceOf: (model: string) => Price | undefined
  /** Output tokens the pre-call estimate assumes when a request sets none. */
  readonly defaultMaxOutputTokens: number
  /** False only when the kernel was built with `enforceBudget: false`: calls are priced but never refused. */
  readonly enforceBudget: boolean
}

/** Faults that end an execution without writing anything: the run stays resumable. */
export type Fault =
  | Errors.SequenceConflict
  | Errors.OwnershipLost
  | Errors.StoreError
  | Errors.NonDeterminism
  | Errors.InvalidHumanResponse
  | Errors.InvalidInput
  | Errors.InvalidRunState

export type Halt =
  | { readonly _tag: "Paused"; readonly ticket: string; readonly reason: string }
  | {
    readonly _tag: "NeedsReconciliation"
    readonly stepKey: string
    readonly tool: string
    /** Set when the step waits on another run in doubt: the path down to the step that needs a person. */
    readonly waitingOn?: ReadonlyArray<WaitingOn> | undefined
  }
  | { readonly _tag: "Fault"; readonly error: Fault }
  | { readonly _tag: "Failed"; readonly error: Errors.BudgetExceeded | Errors.BudgetUnpriced }

export interface ExecutionOptions {
  readonly runId: string
  readonly rootRunId: string
  readonly tenant: TenantContext
  readonly log: ReadonlyArray<Event>
  /** "replay": no step may run live and nothing is written. */
  readonly mode: "live" | "replay"
  /** USD spent by the run's lineage before this execution. */
  readonly spentUsd: number
  /**
   * Reads the lineage's spend again. Sub-runs (an agent's sub-agent, runs started beside this one) spend on the root's
   * budget while this execution runs, so the spend is re-read before every model call.
   */
  readonly lineageSpend?: Effect.Effect<number, Errors.StoreError> | undefined
  /** The response a `resume` brings for the open pause. */
  readonly response?: { readonly payload: unknown } | undefined
  // --- ownership (fencing): see `ownership` below.
  /** The owner epoch this execution writes with (the fencing token its tool handlers get). */
  readonly ownerEpoch: number
  /** The first batch this execution appends claims the run for `ownerEpoch` (an execution of an existing run). */
  readonly claim?: boolean | undefined
  /** The caller's hold on the run (a worker's lease), checked before each handler starts. */
  readonly lease?: Lease | undefined
}

type ToolOutcome =
  | { readonly ok: true; readonly json: Json.Json }
  | {
    readonly ok: false
    readonly error: Errors.ToolError | Errors.InvalidToolArguments | Errors.UnknownTool | Errors.PolicyDenied
  }

const describe = (events: ReadonlyArray<Event>): string => {
  const first = events[0]?.payload
  switch (first?._tag) {
    case "ModelRequested":
      return `a model call (request ${first.requestHash.slice(0, 12)})`
    case "ToolRequested":
      return `a call to tool "${first.tool}" with ${first.arguments}`
    case "StepCompleted":
      return `step "${first.name}"`
    case "PauseRequested":
      return `a pause for a human ("${first.reason}")`
    case undefined:
      return "nothing"
    default:
      return `a ${first._tag} event`
  }
}

/** Whether a step's recorded events settle it: nothing of it is left to run (no call in doubt, no open pause). */
const isSettled = (events: ReadonlyArray<Event>): boolean => {
  const first = events[0]?.payload
  const has = (...tags: ReadonlyArray<EventPayload["_tag"]>) => events.some((e) => tags.includes(e.payload._tag))
  switch (first?._tag) {
    case "ToolRequested":
      return has("ToolCompleted", "ToolFailed")
    case "PauseRequested":
      return has("HumanResponded")
    case "ModelRequested":
      return has("ModelCompleted", "ModelFailed", "PolicyDenied", "BudgetExceeded")
    default:
      return true
  }
}

const failureOf = (p: Extract<EventPayload, { _tag: "ToolFailed" }>, requested: Extract<EventPayload, { _tag: "ToolRequested" }>, tools: ReadonlyArray<string>): ToolOutcome => {
  switch (p.kind) {
    case "denied":
      return { ok: false, error: new Errors.PolicyDenied({ tool: p.tool, reason: p.error }) }
    case "invalid_arguments":
      return { ok: false, error: new Errors.InvalidToolArguments({ tool: p.tool, path: p.path ?? "$", reason: p.error }) }
    case "unknown_tool":
      return { ok: false, error: new Errors.UnknownTool({ tool: requested.tool, available: tools }) }
    case "tool_error":
    case "timeout":
      return { ok: false, error: new Errors.ToolError({ tool: p.tool, reason: p.error, timedOut: p.kind === "timeout" }) }
  }
}

/** `ModelFailed.kind` of a call refused because nothing prices its model. */
const UNPRICED = "budget_unpriced"

export const make = (deps: Deps, options: ExecutionOptions) => {
  const { runId, tenant, mode } = options
  let headSeq = options.log.length === 0 ? 0 : options.log[options.log.length - 1]!.seq
  let headHash = options.log.length === 0 ? GENESIS_HASH : options.log[options.log.length - 1]!.hash
  let spentUsd = options.spentUsd
  let pendingResponse = options.response
  let counter = 0
  let halted: Halt | undefined

  // The log indexed by step key; `order` is the order in which steps first appear.
  const byKey = new Map<string, Array<Event>>()
  const order: Array<string> = []
  for (const event of options.log) {
    if (event.stepKey === RUN_STEP_KEY) continue
    const list = byKey.get(event.stepKey)
    if (list === undefined) {
      byKey.set(event.stepKey, [event])
      order.push(event.stepKey)
    } else list.push(event)
  }
  const consumed = new Set<string>()
  // Keys of the steps this execution runs live (and so writes under).
  const written = new Set<string>()
  let cursor = 0
  const nextUnconsumed = (): string | undefined => {
    while (cursor < order.length && consumed.has(order[cursor]!)) cursor++
    return order[cursor]
  }

  const halt = (h: Halt): Effect.Effect<never> =>
    Effect.suspend(() => {
      halted ??= h
      return Effect.interrupt
    })
  const fault = (error: Fault) => halt({ _tag: "Fault", error })

  // --- ownership (fencing) -------------------------------------------------------------------------------------
  // Every batch carries the execution's owner epoch, and its first one claims the run (`claim`): the store refuses
  // the batches of an owner a newer execution has fenced. Between a `ToolRequested` made durable and its handler's
  // start the process may freeze; so, just before a handler starts, the caller's lease is checked (by the clock,
  // without I/O), and the handler gets the epoch (`fence`) and a signal that fires when the run is lost.
  let claimPending = options.claim === true
  const ownership = new AbortController()
  const lose = (reason: string) => ownership.abort(reason)
  const lease = options.lease
  if (lease !== undefined) {
    const lost = () => lose(typeof lease.signal.reason === "string" ? lease.signal.reason : "its caller lost the run")
    if (lease.signal.aborted) lost()
    else lease.signal.addEventListener("abort", lost, { once: true })
  }
  /** The hold this execution passes on to the runs its handlers drive: its caller's expiry, and its own signal. */
  const heldLease: Lease = { expiresAt: () => lease?.expiresAt() ?? Number.POSITIVE_INFINITY, signal: ownership.signal }
  /** Fails when this execution may no longer own the run: nothing may start in its name. */
  const checkOwnership = (tool: string): Effect.Effect<void> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      if (!ownership.signal.aborted && lease !== undefined && now >= lease.expiresAt()) {
        lose(`its lease on the run ran out at ${new Date(lease.expiresAt()).toISOString()}, ${now - lease.expiresAt()} ms before the call to tool "${tool}" would have started (the process was paused, or too busy to renew it)`)
      }
      if (!ownership.signal.aborted) return Effect.void
      const reason = typeof ownership.signal.reason === "string" ? ownership.signal.reason : "it lost the run"
      return fault(new Errors.OwnershipLost({ runId, ownerEpoch: options.ownerEpoch, reason }))
    })

  /** Appends a batch after the current head; fails with the store's error (used for a run's final events). */
  const appendOrFail = (
    stepKey: string,
    payloads: ReadonlyArray<EventPayload>
  ): Effect.Effect<void, Errors.InvalidRunState | Errors.SequenceConflict | Errors.OwnershipLost | Errors.StoreError> => {
    if (mode === "replay") {
      return Effect.fail(new Errors.InvalidRunState({ runId, status: "being replayed", expected: "live (a replay writes nothing)" }))
    }
    // No generator: this runs twice per tool step.
    return Effect.flatMap(Clock.currentTimeMillis, (timestamp) => {
      const events: Array<Event> = []
      let prevHash = headHash
      for (let i = 0; i < payloads.length; i++) {
        const payload = payloads[i]!
        const event: Types.Mutable<Event> = {
          eventId: crypto.randomUUID(),
          runId,
          tenantId: tenant.tenantId,
          seq: headSeq + i + 1,
          timestamp,
          type: payload._tag,
          stepKey,
          payload,
          prevHash,
          hash: ""
        }
        // The hash covers every field but `hash` itself.
        event.hash = newEventHash(event, deps.auditKey)
        events.push(event)
        prevHash = event.hash
      }
      const request = { runId, tenantId: tenant.tenantId, expectedSeq: headSeq, events, ownerEpoch: options.ownerEpoch, claim: claimPending }
      return Effect.matchEffect(deps.store.append(request), {
        onFailure: (error) => {
          // Another execution wrote first or claimed the run: handlers still running here must learn it.
          if (error._tag !== "StoreError") lose(error.message)
          return Effect.fail(error)
        },
        onSuccess: () => {
          headSeq += events.length
          headHash = prevHash
          claimPending = false
          return Effect.void
        }
      })
    })
  }

  /** Appends a step's batch; a failure halts the execution. */
  const append = (stepKey: string, payloads: ReadonlyArray<EventPayload>): Effect.Effect<void> =>
    Effect.catchAll(appendOrFail(stepKey, payloads), (error) => fault(error))

  /**
   * Finds a step's recorded events, or proves the code may run it live. Synchronous on purpose: replay calls
   * it once per step, and only a fault needs an effect. `actual` is computed only when a fault is reported.
   */
  const lookup = (key: string, actual: () => string): ReadonlyArray<Event> | undefined | Fault => {
    const recorded = byKey.get(key)
    const next = nextUnconsumed()
    if (recorded !== undefined) {
      if (consumed.has(key)) {
        return new Errors.NonDeterminism({ runId, stepKey: key, expected: "a step key used once", actual: `${actual()} reusing it` })
      }
      // A settled step may be met out of the log's order (steps run concurrently, each under its own explicit key,
      // are logged in the order they finished); one that would run anything (a tool call in doubt, an unanswered
      // pause, a model call without a result) may not: the code changed its order, and it would run before the
      // steps that preceded it in the log.
      if (next !== key && !isSettled(recorded)) {
        return new Errors.NonDeterminism({ runId, stepKey: key, expected: `${describe(byKey.get(next!)!)} at step ${next}`, actual: `${actual()} at step ${key}` })
      }
      consumed.add(key)
      return recorded
    }
    // A key this execution already wrote under: the log would hold one step for two (and a replay would refuse it).
    if (written.has(key)) {
      return new Errors.NonDeterminism({ runId, stepKey: key, expected: "a step key used once", actual: `${actual()} reusing it` })
    }
    if (next !== undefined) {
      return new Errors.NonDeterminism({ runId, stepKey: key, expected: `${describe(byKey.get(next)!)} at step ${next}`, actual: actual() })
    }
    if (mode === "replay") return new Errors.NonDeterminism({ runId, stepKey: key, expected: "the end of the log", actual: actual() })
    written.add(key)
    return undefined
  }

  const isFault = (u: ReadonlyArray<Event> | undefined | Fault): u is Fault => u !== undefined && !Array.isArray(u)

  const mismatch = (key: string, recorded: ReadonlyArray<Event>, actual: string) =>
    fault(new Errors.NonDeterminism({ runId, stepKey: key, expected: describe(recorded), actual }))

  const nextKey = (kind: string, explicit: string | undefined): string => {
    const index = counter++
    return explicit ?? `${kind}:${index}`
  }

  const callContext = (stepKey: string, notes: Array<EventPayload>): CallContext => ({
    runId,
    rootRunId: options.rootRunId,
    tenant,
    stepKey,
    spentUsd,
    note: (middleware, note, data) => Effect.sync(() => void notes.push({ _tag: "MiddlewareNote", middleware, note, data }))
  })

  const budgetExceeded = (stepKey: string, phase: "before_call" | "after_call", before: ReadonlyArray<EventPayload>) =>
    Effect.gen(function*() {
      const error = new Errors.BudgetExceeded({ runId, limitUsd: tenant.budgetUsdLimit, spentUsd })
      yield* append(stepKey, [...before, { _tag: "BudgetExceeded", limitUsd: tenant.budgetUsdLimit, spentUsd, phase }])
      return yield* halt({ _tag: "Failed", error })
    })

  // ---------------------------------------------------------------------------------------------- model

  const modelStep = (request: ModelPort.ModelRequest, explicitKey?: string | undefined) =>
    Effect.gen(function*() {
      if (halted !== undefined) return yield* halt(halted)
      const key = nextKey("model", explicitKey)
      const requestHash = sha256(canonicalJson({
        model: request.model,
        messages: request.messages,
        tools: request.tools,
        outputFormat: request.outputFormat ?? null,
        maxOutputTokens: request.maxOutputTokens ?? null
      }))
      const recorded = lookup(key, () => `a model call (request ${requestHash.slice(0, 12)})`)
      if (isFault(recorded)) return yield* fault(recorded)
      if (recorded !== undefined) {
        const first = recorded[0]!.payload
        if (first._tag === "BudgetExceeded") {
          return yield* halt({ _tag: "Failed", error: new Errors.BudgetExceeded({ runId, limitUsd: first.limitUsd, spentUsd: first.spentUsd }) })
        }
        if (first._tag !== "ModelRequested" || first.requestHash !== requestHash) {
          return yield* mismatch(key, recorded, `a model call (request ${requestHash.slice(0, 12)})`)
        }
        for (const e of recorded) {
          const p = e.payload
          if (p._tag === "PolicyDenied") return yield* Effect.fail(new Errors.PolicyDenied({ tool: "model", reason: p.reason }))
          if (p._tag === "BudgetExceeded") {
            return yield* halt({ _tag: "Failed", error: new Errors.BudgetExceeded({ runId, limitUsd: p.limitUsd, spentUsd: p.spentUsd }) })
          }
        }
        const completed = recorded.find((e) => e.payload._tag === "ModelCompleted")?.payload
        if (completed === undefined || completed._tag !== "ModelCompleted") {
          const failed = recorded.find((e) => e.payload._tag === "ModelFailed")?.payload
          if (failed?._tag === "ModelFailed" && failed.kind === UNPRICED) {
            return yield* halt({ _tag: "Failed", error: new Errors.BudgetUnpriced({ runId, model: first.model }) })
          }
          const kind = failed?._tag === "ModelFailed" ? Schema.decodeUnknownOption(Errors.ModelError.fields.kind)(failed.kind) : undefined
          return yield* Effect.fail(new Errors.ModelError({
            kind: kind?._tag === "Some" ? kind.value : "unknown",
            reason: failed?._tag === "ModelFailed" ? failed.error : "the logged model call has no result",
            retryable: false
          }))
        }
        return { message: completed.message, usage: completed.usage, costUsd: completed.costUsd }
      }
      // The lineage's spend, read again before every call: sub-runs of the same root (a tool's, or running beside this
      // one) spend on the same budget.
      if (options.lineageSpend !== undefined) {
        const lineage = yield* Effect.catchAll(options.lineageSpend, (error) => fault(error))
        spentUsd = Math.max(spentUsd, lineage)
      }
      if (deps.enforceBudget && spentUsd >= tenant.budgetUsdLimit) return yield* budgetExceeded(key, "before_call", [])
      const notes: Array<EventPayload> = []
      const context = callContext(key, notes)
      const requested = (sent: ModelPort.ModelRequest): EventPayload => ({
        _tag: "ModelRequested",
        model: sent.model,
        messages: sent.messages,
        tools: sent.tools.map((t) => t.name),
        requestHash,
        ...(sent.outputFormat === undefined ? {} : { outputSchema: sent.outputFormat.schema }),
        ...(sent.maxOutputTokens === undefined ? {} : { maxOutputTokens: sent.maxOutputTokens })
      })
      let sent = request
      for (const interceptor of deps.interceptors) {
        if (interceptor.beforeModel === undefined) continue
        const next = yield* Effect.either(interceptor.beforeModel(sent, context))
        if (Either.isLeft(next)) {
          const error = next.left
          if (error._tag === "BudgetExceeded") return yield* budgetExceeded(key, "before_call", [requested(sent), ...notes])
          yield* append(key, [requested(sent), ...notes, { _tag: "PolicyDenied", tool: "model", reason: error.reason, middleware: interceptor.name }])
          return yield* Effect.fail(error)
        }
        sent = next.right
      }
      const price = deps.priceOf(sent.model)
      if (!deps.enforceBudget) {
        notes.push({ _tag: "MiddlewareNote", middleware: "kernel", note: "budget_not_enforced", data: { limitUsd: tenant.budgetUsdLimit } })
      } else if (price === undefined) {
        // Refused before the request: a call that cannot be priced is never treated as free.
        yield* append(key, [requested(sent), ...notes, { _tag: "ModelFailed", kind: UNPRICED, error: `no price is known for model "${sent.model}"` }])
        return yield* halt({ _tag: "Failed", error: new Errors.BudgetUnpriced({ runId, model: sent.model }) })
      } else if (price.input > 0 || price.output > 0) {
        // The call's cost at most: the prompt as the model counts it, and every output token the request allows.
        const promptTokens = yield* deps.model.countTokens(sent.messages, sent.model)
        const outputTokens = sent.maxOutputTokens ?? deps.defaultMaxOutputTokens
        // A count the tokenizer cannot give is priced at the whole budget: refused, not waved through.
        const estimateUsd = costOf({ inputTokens: promptTokens, outputTokens }, price) ?? Number.POSITIVE_INFINITY
        if (spentUsd + estimateUsd > tenant.budgetUsdLimit) {
          notes.push({
            _tag: "MiddlewareNote",
            middleware: "kernel",
            note: "estimate_over_budget",
            data: { model: sent.model, promptTokens, outputTokens, estimateUsd: Number.isFinite(estimateUsd) ? estimateUsd : null, spentUsd, limitUsd: tenant.budgetUsdLimit }
          })
          return yield* budgetExceeded(key, "before_call", [requested(sent), ...notes])
        }
        // The reply may not cost more than the estimate: the output tokens it assumed are sent as the model's cap.
        if (sent.maxOutputTokens === undefined) sent = { ...sent, maxOutputTokens: outputTokens }
      }
      const generated = yield* Effect.either(deps.model.generate(sent))
      if (Either.isLeft(generated)) {
        yield* append(key, [requested(sent), ...notes, { _tag: "ModelFailed", kind: generated.left.kind, error: generated.left.reason }])
        return yield* Effect.fail(generated.left)
      }
      let response = generated.right
      for (let i = deps.interceptors.length - 1; i >= 0; i--) {
        const interceptor = deps.interceptors[i]!
        if (interceptor.afterModel === undefined) continue
        const next = yield* Effect.either(interceptor.afterModel(sent, response, context))
        if (Either.isLeft(next)) {
          const error = next.left
          if (error._tag === "BudgetExceeded") return yield* budgetExceeded(key, "after_call", [requested(sent), ...notes])
          yield* append(key, [requested(sent), ...notes, { _tag: "PolicyDenied", tool: "model", reason: error.reason, middleware: interceptor.name }])
          return yield* Effect.fail(error)
        }
        response = next.right
      }
      // A cost the adapter (or a middleware) reports wins when it is one (a finite, non-negative number); else the
      // usage at the price of the model that answered. Anything else (a negative or NaN cost, usage that is not a count
      // of tokens) is no cost the budget can hold: the call is recorded as refused, like an unpriced one, and the run
      // fails, rather than a refund or a NaN switching the budget off.
      const answeredPrice = response.model === sent.model ? price : deps.priceOf(response.model) ?? price
      const reported = response.costUsd
      const costUsd = reported !== undefined
        ? (Number.isFinite(reported) && reported >= 0 ? reported : undefined)
        : answeredPrice === undefined
        ? (deps.enforceBudget ? undefined : 0)
        : costOf(response.usage, answeredPrice)
      if (costUsd === undefined) {
        const why = `the call to model "${response.model}" reported a cost or usage that is not one (cost ${String(reported)}, usage ${JSON.stringify(response.usage)})`
        yield* append(key, [requested(sent), ...notes, { _tag: "ModelFailed", kind: UNPRICED, error: why }])
        return yield* halt({ _tag: "Failed", error: new Errors.BudgetUnpriced({ runId, model: response.model }) })
      }
      spentUsd += costUsd
      for (const n of response.notes ?? []) notes.push({ _tag: "MiddlewareNote", middleware: n.source, note: n.note, data: n.data })
      const payloads: Array<EventPayload> = [
        requested(sent),
        ...notes,
        { _tag: "ModelCompleted", model: response.model, message: response.message, usage: response.usage, costUsd }
      ]
      if (deps.enforceBudget && spentUsd > tenant.budgetUsdLimit) return yield* budgetExceeded(key, "after_call", payloads)
      yield* append(key, payloads)
      return { message: response.message, usage: response.usage, costUsd }
    })

  // ----------------------------------------------------------------------------------------------- tool

  const availableTools = () => deps.tools.list().map((t) => t.name)

  const outcomeOf = (recorded: ReadonlyArray<Event>): ToolOutcome | undefined => {
    const requested = recorded[0]!.payload
    if (requested._tag !== "ToolRequested") return undefined
    for (let i = recorded.length - 1; i >= 1; i--) {
      const p = recorded[i]!.payload
      if (p._tag === "ToolCompleted") return { ok: true, json: p.result }
      if (p._tag === "ToolFailed") return failureOf(p, requested, availableTools())
    }
    return undefined
  }

  /** Runs the handler of a requested call and appends its outcome (`ToolRequested` is already durable). */
  const runHandler = (tool: Tool, args: unknown, key: string, idempotencyKey: string, info: ToolCallInfo, notes: Array<EventPayload>) =>
    Effect.gen(function*() {
      yield* checkOwnership(tool.name)
      const handlerContext = { runId, tenant, idempotencyKey, stepKey: key, fence: options.ownerEpoch, signal: ownership.signal, lease: heldLease }
      const result = yield* Effect.either(tool.invoke(args, handlerContext))
      const encoded = Either.flatMap(result, (r) => tool.encodeResult(r))
      if (Either.isLeft(encoded)) {
        const error = encoded.left
        if (error._tag === "WaitingOnRun") {
          // Not an outcome: the call waits on a run in doubt, so this run waits too, naming the path to it.
          const waitingOn = error.path
          yield* append(key, [...notes, { _tag: "ReconciliationRequired", tool: tool.name, idempotencyKey, waitingOn }])
          return yield* halt({ _tag: "NeedsReconciliation", stepKey: key, tool: tool.name, waitingOn })
        }
        if (error._tag === "PolicyDenied") {
          // Denied by the tool itself, as it ran: logged as a denial, with its reason.
          yield* append(key, [
            ...notes,
            { _tag: "PolicyDenied", tool: tool.name, reason: error.reason },
            { _tag: "ToolFailed", tool: tool.name, kind: "denied", error: error.reason }
          ])
          // The same error a replay of the log gives.
          return { ok: false, error: new Errors.PolicyDenied({ tool: tool.name, reason: error.reason }) } satisfies ToolOutcome
        }
        yield* append(key, [...notes, { _tag: "ToolFailed", tool: tool.name, kind: error.timedOut === true ? "timeout" : "tool_error", error: error.reason }])
        return { ok: false, error } satisfies ToolOutcome
      }
      let json = encoded.right
      const context = callContext(key, notes)
      for (let i = deps.interceptors.length - 1; i >= 0; i--) {
        const interceptor = deps.interceptors[i]!
        if (interceptor.afterTool === undefined) continue
        const next = yield* Effect.either(interceptor.afterTool(info, json, context))
        if (Either.isLeft(next)) {
          const error = next.left
          if (error._tag === "BudgetExceeded") return yield* budgetExceeded(key, "after_call", notes)
          yield* append(key, [...notes, { _tag: "ToolFailed", tool: tool.name, kind: error._tag === "PolicyDenied" ? "denied" : "tool_error", error: error.reason }])
          return { ok: false, error } satisfies ToolOutcome
        }
        json = next.right
      }
      yield* append(key, [...notes, { _tag: "ToolCompleted", tool: tool.name, result: json }])
      return { ok: true, json } satisfies ToolOutcome
    })

  interface ToolCallRequest {
    readonly name: string
    /** JSON text, or a thunk encoding the code's typed arguments. */
    readonly arguments: string
    readonly toolCallId?: string | undefined
    readonly key?: string | undefined
    readonly value?: Tool | undefined
    /** Tools the model was offered (chat), or undefined (code may call any registered tool). */
    readonly offered?: ReadonlySet<string> | undefined
  }

  /** A tool step. The common replay case (a logged outcome) is answered without entering a generator. */
  const toolStep = (call: ToolCallRequest): Effect.Effect<ToolOutcome> =>
    Effect.suspend(() => {
      if (halted !== undefined) return halt(halted)
      const key = nextKey("tool", call.key)
      const actual = () => `a call to tool "${call.name}" with ${call.arguments}`
      const recorded = lookup(key, actual)
      if (isFault(recorded)) return fault(recorded)
      if (recorded !== undefined) {
        const first = recorded[0]!.payload
        if (first._tag !== "ToolRequested" || first.tool !== call.name || (call.toolCallId === undefined && !sameArguments(first.arguments, call.arguments))) {
          return mismatch(key, recorded, actual())
        }
        const outcome = outcomeOf(recorded)
        if (outcome !== undefined) return Effect.succeed(outcome)
      }
      return unsettledToolStep(call, key, recorded)
    })

  /** A tool step with no logged outcome: in doubt (requested, then a crash) or new. */
  const unsettledToolStep = (call: ToolCallRequest, key: string, recorded: ReadonlyArray<Event> | undefined): Effect.Effect<ToolOutcome> =>
    Effect.gen(function*() {
      const tool = call.value ?? deps.tools.get(call.name)
      const idempotencyKey = `${runId}/${key}`
      if (recorded !== undefined) {
        const first = recorded[0]!.payload
        if (first._tag !== "ToolRequested") return yield* mismatch(key, recorded, `a call to tool "${call.name}"`)
        let marker: EventPayload | undefined
        for (const e of recorded) if (e.payload._tag === "ReconciliationRequired") marker = e.payload
        if (marker?._tag === "ReconciliationRequired" && marker.waitingOn !== undefined && tool !== undefined) {
          // The call waited on another run in doubt. The kernel resumes this run only once that run is settled (or
          // after a crash), so the handler runs again, with the same key: it fails with `WaitingOnRun` again if
          // that run still waits.
          if (mode === "replay") return yield* halt({ _tag: "NeedsReconciliation", stepKey: key, tool: call.name, waitingOn: marker.waitingOn })
          const args = tool.decodeArguments(first.arguments)
          if (Either.isLeft(args)) return { ok: false, error: args.left } satisfies ToolOutcome
          const info = { tool: call.name, requiresCapability: tool.requiresCapability, arguments: first.arguments }
          return yield* runHandler(tool, args.right, key, first.idempotencyKey, info, [])
        }
        // In doubt: requested, no outcome.
        if (recorded.some((e) => e.payload._tag === "ReconciliationRequired") || tool === undefined || !tool.idempotent) {
          if (!recorded.some((e) => e.payload._tag === "ReconciliationRequired")) {
            yield* append(key, [{ _tag: "ReconciliationRequired", tool: call.name, idempotencyKey: first.idempotencyKey }])
          }
          return yield* halt({ _tag: "NeedsReconciliation", stepKey: key, tool: call.name })
        }
        if (mode === "replay") {
          return yield* fault(new Errors.InvalidRunState({ runId, status: `in doubt at step ${key}`, expected: "settled (a replay runs no tool)" }))
        }
        const args = tool.decodeArguments(first.arguments)
        if (Either.isLeft(args)) return { ok: false, error: args.left } satisfies ToolOutcome
        const info = { tool: call.name, requiresCapability: tool.requiresCapability, arguments: first.arguments }
        return yield* runHandler(tool, args.right, key, first.idempotencyKey, info, [])
      }

      const requested: EventPayload = {
        _tag: "ToolRequested",
        tool: call.name,
        arguments: call.arguments,
        idempotencyKey,
        ...(call.toolCallId === undefined ? {} : { toolCallId: call.toolCallId })
      }
      const fail = (payloads: ReadonlyArray<EventPayload>, error: Extract<ToolOutcome, { ok: false }>["error"]) =>
        Effect.as(append(key, [requested, ...payloads]), { ok: false, error } satisfies ToolOutcome)

      if (tool === undefined || (call.offered !== undefined && !call.offered.has(call.name) && hasCapability(tenant, tool.requiresCapability))) {
        const error = new Errors.UnknownTool({ tool: call.name, available: call.offered === undefined ? availableTools() : [...call.offered] })
        return yield* fail([{ _tag: "ToolFailed", tool: call.name, kind: "unknown_tool", error: error.message }], error)
      }
      if (!hasCapability(tenant, tool.requiresCapability)) {
        const reason = `tenant ${tenant.tenantId} lacks capability "${tool.requiresCapability}"`
        const error = new Errors.PolicyDenied({ tool: call.name, reason, capability: tool.requiresCapability })
        return yield* fail([
          { _tag: "PolicyDenied", tool: call.name, reason, ...(tool.requiresCapability === undefined ? {} : { capability: tool.requiresCapability }) },
          { _tag: "ToolFailed", tool: call.name, kind: "denied", error: reason }
        ], error)
      }
      const notes: Array<EventPayload> = []
      const context = callContext(key, notes)
      let info: ToolCallInfo = { tool: call.name, requiresCapability: tool.requiresCapability, arguments: call.arguments }
      for (const interceptor of deps.interceptors) {
        if (interceptor.beforeTool === undefined) continue
        const next = yield* Effect.either(interceptor.beforeTool(info, context))
        if (Either.isLeft(next)) {
          const error = next.left
          if (error._tag === "BudgetExceeded") return yield* budgetExceeded(key, "before_call", [requested, ...notes])
          return yield* fail([
            ...notes,
            { _tag: "PolicyDenied", tool: call.name, reason: error.reason, middleware: interceptor.name },
            { _tag: "ToolFailed", tool: call.name, kind: "denied", error: error.reason }
          ], error)
        }
        info = next.right
      }
      const args = tool.decodeArguments(info.arguments)
      if (Either.isLeft(args)) {
        const error = args.left
        return yield* fail([...notes, { _tag: "ToolFailed", tool: call.name, kind: "invalid_arguments", error: error.reason, path: error.path }], error)
      }
      const logged: EventPayload = { ...requested, arguments: info.arguments }
      // A call requested by an owner that lost the run would only leave the next owner a call in doubt.
      yield* checkOwnership(call.name)
      yield* append(key, [logged, ...notes])
      return yield* runHandler(tool, args.right, key, idempotencyKey, info, [])
    })

  const toolMessage = (id: string, name: string, outcome: ToolOutcome): ToolMessage => ({
    role: "tool",
    toolCallId: id,
    name,
    content: outcome.ok
      ? (typeof outcome.json === "string" ? outcome.json : JSON.stringify(outcome.json))
      : JSON.stringify({ error: outcome.error._tag, message: outcome.error.message })
  })

  // ----------------------------------------------------------------------------------------------- chat

  /** The tools a step offers: names resolved in the registry (unknown names dropped), values as given. */
  const resolveTools = (tools: ReadonlyArray<string | Tool> | undefined): ReadonlyArray<Tool> =>
    tools === undefined
      ? deps.tools.list()
      : tools.flatMap((t) => {
        if (typeof t !== "string") return [t]
        const found = deps.tools.get(t)
        return found === undefined ? [] : [found]
      })

  interface Offer {
    /** The tools the model sees: those the tenant's capabilities allow. */
    readonly visible: ReadonlyMap<string, Tool>
    /** Every tool given, so a call to one the tenant may not use is denied by name rather than unknown. */
    readonly all: ReadonlyMap<string, Tool>
  }

  const offerTools = (tools: ReadonlyArray<string | Tool> | undefined): Offer => {
    const visible = new Map<string, Tool>()
    const all = new Map<string, Tool>()
    for (const t of resolveTools(tools)) {
      all.set(t.name, t)
      if (hasCapability(tenant, t.requiresCapability)) visible.set(t.name, t)
    }
    return { visible, all }
  }

  const modelStepWith = <A, I>(opts: ModelStepOptions<A, I>, offer: Offer): Effect.Effect<ModelStepResult<A>, ModelStepError> =>
    Effect.suspend(() => {
      const schema = opts.outputSchema
      return Effect.map(
        modelStep({
          model: opts.model ?? deps.model.defaultModel,
          messages: opts.messages,
          tools: [...offer.visible.values()].map((t) => t.spec),
          outputFormat: schema === undefined ? undefined : { name: "output", schema: jsonSchemaOf(schema) },
          maxOutputTokens: opts.maxOutputTokens
        }, opts.key),
        (step): ModelStepResult<A> => {
          const toolCalls = step.message.toolCalls ?? []
          const text = step.message.content ?? ""
          const answer = toolCalls.length > 0 ? undefined : schema === undefined ? Either.right(text as A) : decodeAnswer(schema, text)
          return { message: step.message, toolCalls, answer, usage: step.usage, costUsd: step.costUsd }
        }
      )
    })

  const toolCallWith = (call: ToolCall, offer: Offer, key: string | undefined): Effect.Effect<ToolCallOutcome> =>
    Effect.map(
      toolStep({ name: call.name, arguments: call.arguments, toolCallId: call.id, offered: new Set(offer.visible.keys()), value: offer.all.get(call.name), key }),
      (outcome): ToolCallOutcome => ({
        message: toolMessage(call.id, call.name, outcome),
        result: outcome.ok ? Either.right(outcome.json) : Either.left(outcome.error)
      })
    )

  const chat = <A, I>(chatOptions: ChatOptions<A, I>): Effect.Effect<ChatResult<A>, ChatError> =>
    Effect.gen(function*() {
      const offered = offerTools(chatOptions.tools)
      const maxTurns = chatOptions.maxTurns ?? 10
      const maxDecodeRetries = chatOptions.maxDecodeRetries ?? 2
      const messages: Array<ChatMessage> = [...chatOptions.messages]
      const usage = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0 }
      let costUsd = 0
      let decodeFailures = 0
      for (let turn = 0; turn < maxTurns; turn++) {
        const step = yield* modelStepWith({
          messages: [...messages],
          model: chatOptions.model,
          outputSchema: chatOptions.outputSchema,
          maxOutputTokens: chatOptions.maxOutputTokens
        }, offered)
        usage.inputTokens += step.usage.inputTokens
        usage.outputTokens += step.usage.outputTokens
        usage.cachedInputTokens += step.usage.cachedInputTokens ?? 0
        costUsd += step.costUsd
        messages.push(step.message)
        if (step.answer === undefined) {
          for (const call of step.toolCalls) messages.push((yield* toolCallWith(call, offered, undefined)).message)
          continue
        }
        const total: Usage = usage
        if (Either.isRight(step.answer)) {
          return { output: step.answer.right, message: step.message, messages, usage: total, costUsd } satisfies ChatResult<A>
        }
        decodeFailures++
        if (decodeFailures > maxDecodeRetries) {
          return yield* Effect.fail(new Errors.OutputDecodeError({ attempts: decodeFailures, reason: step.answer.left }))
        }
        messages.push({
          role: "user",
          content: `Your answer did not match the required JSON schema: ${step.answer.left}. Answer again with JSON only.`
        })
      }
      return yield* Effect.fail(new Errors.MaxTurnsExceeded({ maxTurns }))
    })

  // ---------------------------------------------------------------------------------- steps and pauses

  const step = <A, I, E>(name: string, effect: Effect.Effect<A, E>, schema: Schema.Schema<A, I>, key: string | undefined, kind = "step") =>
    Effect.gen(function*() {
      if (halted !== undefined) return yield* halt(halted)
      const stepKey = nextKey(kind, key)
      const actual = `step "${name}"`
      const recorded = lookup(stepKey, () => actual)
      if (isFault(recorded)) return yield* fault(recorded)
      if (recorded !== undefined) {
        const first = recorded[0]!.payload
        if (first._tag !== "StepCompleted" || first.name !== name) return yield* mismatch(stepKey, recorded, actual)
        const value = decodeExact(schema)(first.value)
        if (Either.isLeft(value)) {
          return yield* fault(new Errors.InvalidInput({ what: `logged value of step "${name}" (${stepKey})`, reason: firstIssue(value.left).reason }))
        }
        return value.right
      }
      const value = yield* effect
      const encoded = Either.mapLeft(Schema.encodeEither(schema)(value), (e) => firstIssue(e).reason)
      const json = Either.flatMap(encoded, (u) => {
        const r = Json.fromUnknown(u)
        return r.ok ? Either.right(r.json) : Either.left(r.error)
      })
      if (Either.isLeft(json)) {
        return yield* Effect.die(new Errors.InvalidInput({ what: `value of step "${name}"`, reason: json.left }))
      }
      yield* append(stepKey, [{ _tag: "StepCompleted", name, value: json.right }])
      return value
    })

  const pauseForHuman = <A, I>(pause: PauseOptions<A, I>): Effect.Effect<A> =>
    Effect.gen(function*() {
      if (halted !== undefined) return yield* halt(halted)
      const key = nextKey("pause", pause.key)
      const actual = `a pause for a human ("${pause.reason}")`
      const recorded = lookup(key, () => actual)
      if (isFault(recorded)) return yield* fault(recorded)
      const decode = (u: unknown): Either.Either<A, string> =>
        pause.schema === undefined
          ? Either.right(u as A)
          : Either.mapLeft(Schema.decodeUnknownEither(pause.schema)(u), (e) => {
            const issue = firstIssue(e)
            return `${issue.path}: ${issue.reason}`
          })
      if (recorded !== undefined) {
        const first = recorded[0]!.payload
        if (first._tag !== "PauseRequested") return yield* mismatch(key, recorded, actual)
        const responded = recorded.find((e) => e.payload._tag === "HumanResponded")?.payload
        if (responded !== undefined && responded._tag === "HumanResponded") {
          const value = decode(responded.payload)
          if (Either.isLeft(value)) return yield* fault(new Errors.InvalidInput({ what: `logged human response (${key})`, reason: value.left }))
          return value.right
        }
        if (pendingResponse === undefined) return yield* halt({ _tag: "Paused", ticket: first.ticket, reason: first.reason })
        const response = pendingResponse.payload
        const value = decode(response)
        if (Either.isLeft(value)) {
          return yield* fault(new Errors.InvalidHumanResponse({ runId, ticket: first.ticket, reason: value.left }))
        }
        const encoded = pause.schema === undefined
          ? Either.right(response)
          : Either.mapLeft(Schema.encodeEither(pause.schema)(value.right), (e) => firstIssue(e).reason)
        const json = Either.isLeft(encoded) ? undefined : Json.fromUnknown(encoded.right)
        if (json === undefined || !json.ok) {
          return yield* fault(new Errors.InvalidHumanResponse({ runId, ticket: first.ticket, reason: json === undefined || json.ok ? "does not encode" : json.error }))
        }
        pendingResponse = undefined
        yield* append(key, [{ _tag: "HumanResponded", ticket: first.ticket, payload: json.json }])
        return value.right
      }
      const ticket = crypto.randomUUID()
      yield* append(key, [{
        _tag: "PauseRequested",
        reason: pause.reason,
        ticket,
        ...(pause.schema === undefined ? {} : { responseSchema: jsonSchemaOf(pause.schema) })
      }])
      return yield* halt({ _tag: "Paused", ticket, reason: pause.reason })
    })

  const context: WorkflowContext = {
    runId,
    tenant,
    chat,
    modelStep: (opts) => modelStepWith(opts, offerTools(opts.tools)),
    toolCall: (call: ToolCall, opts?: ToolCallOptions) => toolCallWith(call, offerTools(opts?.tools), opts?.key),
    tool: <Args, Result>(tool: Tool<Args, Result> | string, args: Args, opts?: { readonly key?: string | undefined }) =>
      Effect.suspend(() => {
        const value: Tool<Args, Result> | Tool | undefined = typeof tool === "string" ? deps.tools.get(tool) : tool
        const name = typeof tool === "string" ? tool : tool.name
        let text: string
        if (value === undefined) {
          const r = Json.fromUnknown(args)
          text = r.ok ? JSON.stringify(r.json) : "null"
        } else {
          const encoded = value.encodeArguments(args)
          if (Either.isLeft(encoded)) {
            // Arguments the schema refuses (an unknown property) go to the log as given, where decoding refuses them
            // as invalid arguments, logged like a model's; only arguments that are not even JSON fail here.
            const r = Json.fromUnknown(args)
            if (!r.ok) return Effect.fail(encoded.left)
            text = JSON.stringify(r.json)
          } else text = encoded.right
        }
        return Effect.flatMap(toolStep({ name, arguments: text, key: opts?.key, value }), (outcome): Effect.Effect<Result, ToolCallError> => {
          if (!outcome.ok) return Effect.fail(outcome.error)
          if (value === undefined) return Effect.die("unreachable: an unknown tool cannot succeed")
          const decoded = value.decodeResult(outcome.json)
          return Either.isLeft(decoded) ? Effect.fail(decoded.left) : Effect.succeed(decoded.right as Result)
        })
      }),
    step: (name, effect, schema, opts) => step(name, effect, schema, opts?.key),
    now: () => step("now", Clock.currentTimeMillis, Schema.Number, undefined, "now"),
    random: () => step("random", Random.next, Schema.Number, undefined, "random"),
    sleep: (duration) =>
      Effect.gen(function*() {
        const ms = Duration.toMillis(Duration.decode(duration))
        const until = yield* step("sleep", Effect.map(Clock.currentTimeMillis, (now) => now + ms), Schema.Number, undefined, "sleep")
        const now = yield* Clock.currentTimeMillis
        if (until > now) yield* Effect.sleep(Duration.millis(until - now))
      }),
    pauseForHuman
  }

  return {
    context,
    appendOrFail,
    halted: () => halted,
    head: () => ({ seq: headSeq, hash: headHash }),
    spentUsd: () => spentUsd,
    /** Steps the log holds that the code did not ask for. */
    unconsumed: () => nextUnconsumed(),
    describeKey: (key: string) => describe(byKey.get(key) ?? [])
  }
}

export type Execution = ReturnType<typeof make>

/** Arguments given by code match the logged ones: the same text, or the same JSON in another key order. */
const sameArguments = (logged: string, given: string): boolean => {
  if (logged === given) return true
  try {
    return canonicalJson(JSON.parse(logged)) === canonicalJson(JSON.parse(given))
  } catch {
    return false
  }
}

const decodeAnswer = <A, I>(schema: Schema.Schema<A, I>, text: string): Either.Either<A, string> => {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return Either.left(`the answer is not JSON: ${text.slice(0, 80)}`)
  }
  return Either.mapLeft(Schema.decodeUnknownEither(schema)(parsed), (e) => {
    const issue = firstIssue(e)
    return `${issue.path}: ${issue.reason}`
  })
}
