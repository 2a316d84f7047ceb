/**
 * A tool's handler, run for a call whose `ToolRequested` is durable: its outcome, passed through the `afterTool`
 * hooks, is logged with the call's notes. A handler waiting on another run in doubt leaves this run waiting too.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Errors from "../Errors.js"
import type { EventPayload } from "../Event.js"
import type * as Json from "../Json.js"
import type { Interceptor, ToolCallInfo } from "../Middleware.js"
import type { Tool } from "../Tool.js"
import * as Interceptors from "./interceptors.js"
import type { StepEnv } from "./stepEnv.js"

/** How a tool call ended, as the code and the model see it. */
export type ToolOutcome =
  | { readonly ok: true; readonly json: Json.Json }
  | {
    readonly ok: false
    readonly error: Errors.ToolError | Errors.InvalidToolArguments | Errors.UnknownTool | Errors.PolicyDenied | Errors.ApprovalRejected
  }

/**
 * Runs the handler of a requested call and appends its outcome (`ToolRequested` is already durable). No generator:
 * this runs once per live tool step.
 */
export const runHandler = (
  env: StepEnv,
  tool: Tool,
  args: unknown,
  key: string,
  idempotencyKey: string,
  info: ToolCallInfo,
  notes: Array<EventPayload>
): Effect.Effect<ToolOutcome> =>
  env.owned(tool.name, () => {
    const handlerContext = {
      runId: env.runId,
      tenant: env.tenant,
      idempotencyKey,
      stepKey: key,
      fence: env.options.ownerEpoch,
      signal: env.ownership.signal,
      lease: env.ownership.lease
    }
    // One node for the handler's outcome (not `either`, then `flatMap`): this runs once per live tool step.
    return env.handler(Effect.matchEffect(tool.invoke(args, handlerContext), {
      onFailure: (error) => failed(env, tool, key, idempotencyKey, notes, error),
      onSuccess: (result) => {
        const encoded = tool.encodeResult(result)
        return Either.isLeft(encoded)
          ? failed(env, tool, key, idempotencyKey, notes, encoded.left)
          : completed(env, tool, key, info, notes, encoded.right)
      }
    }))
  })

/** A handler that failed: its failure logged (or the run left waiting, when the call waits or may have acted). */
const failed = (
  env: StepEnv,
  tool: Tool,
  key: string,
  idempotencyKey: string,
  notes: Array<EventPayload>,
  error: Errors.ToolError | Errors.PolicyDenied | Errors.WaitingOnRun | Errors.ToolOutcomeUnknown
): Effect.Effect<ToolOutcome> => {
  if (error._tag === "WaitingOnRun") {
    // Not an outcome: the call waits on a run in doubt, so this run waits too, naming the path to it.
    const waitingOn = error.path
    return Effect.zipRight(
      env.append(key, [...notes, { _tag: "ReconciliationRequired", tool: tool.name, idempotencyKey, waitingOn }]),
      env.halt({ _tag: "NeedsReconciliation", stepKey: key, tool: tool.name, waitingOn })
    )
  }
  if (error._tag === "ToolOutcomeUnknown" && !tool.idempotent) {
    // The call may have acted: in doubt, as after a crash; a person settles it (`reconcile`).
    return Effect.zipRight(
      env.append(key, [...notes, { _tag: "ReconciliationRequired", tool: tool.name, idempotencyKey }]),
      env.halt({ _tag: "NeedsReconciliation", stepKey: key, tool: tool.name })
    )
  }
  if (error._tag === "ToolOutcomeUnknown") {
    // An idempotent call is safe to repeat: a tool error the model or the code may retry.
    return Effect.as(
      env.append(key, [...notes, { _tag: "ToolFailed", tool: tool.name, kind: "tool_error", error: error.message }]),
      { ok: false, error: new Errors.ToolError({ tool: tool.name, reason: error.message }) } satisfies ToolOutcome
    )
  }
  if (error._tag === "PolicyDenied") {
    // Denied by the tool itself, as it ran: logged as a denial, with its reason.
    return Effect.as(
      env.append(key, [
        ...notes,
        { _tag: "PolicyDenied", tool: tool.name, reason: error.reason },
        { _tag: "ToolFailed", tool: tool.name, kind: "denied", error: error.reason }
      ]),
      // The same error a replay of the log gives.
      { ok: false, error: new Errors.PolicyDenied({ tool: tool.name, reason: error.reason }) } satisfies ToolOutcome
    )
  }
  return Effect.as(
    env.append(key, [...notes, { _tag: "ToolFailed", tool: tool.name, kind: error.timedOut === true ? "timeout" : "tool_error", error: error.reason }]),
    { ok: false, error } satisfies ToolOutcome
  )
}

const hasAfterTool = (i: Interceptor): boolean => i.afterTool !== undefined

/** A handler's result, passed through the `afterTool` hooks (skipped when no interceptor has one) and logged. */
const completed = (env: StepEnv, tool: Tool, key: string, info: ToolCallInfo, notes: Array<EventPayload>, json: Json.Json): Effect.Effect<ToolOutcome> => {
  const interceptors = env.deps.interceptors
  if (!interceptors.some(hasAfterTool)) {
    const completed: EventPayload = { _tag: "ToolCompleted", tool: tool.name, result: json }
    return Effect.as(env.append(key, notes.length === 0 ? [completed] : [...notes, completed]), { ok: true, json } satisfies ToolOutcome)
  }
  const context = env.callContext(key, notes)
  return Effect.flatMap(
    Interceptors.run(interceptors, "after", json, (i) => i.afterTool === undefined ? undefined : (value) => i.afterTool!(info, value, context)),
    (after): Effect.Effect<ToolOutcome> => {
      if (after._tag === "Refused") {
        const error = after.error
        if (error._tag === "BudgetExceeded") return env.budgetExceeded(key, "after_call", notes)
        return Effect.as(
          env.append(key, [...notes, { _tag: "ToolFailed", tool: tool.name, kind: error._tag === "PolicyDenied" ? "denied" : "tool_error", error: error.reason }]),
          { ok: false, error } satisfies ToolOutcome
        )
      }
      return Effect.as(env.append(key, [...notes, { _tag: "ToolCompleted", tool: tool.name, result: after.value }]), { ok: true, json: after.value } satisfies ToolOutcome)
    }
  )
}
