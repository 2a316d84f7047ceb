/**
 * A tool's handler, run for a call whose `ToolRequested` is durable: its outcome, passed through the `afterTool`
 * hooks, is logged with the call's notes. A handler waiting on another run in doubt leaves this run waiting too.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Errors from "../Errors.js"
import type { EventPayload } from "../Event.js"
import type * as Json from "../Json.js"
import type { ToolCallInfo } from "../Middleware.js"
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

/** Runs the handler of a requested call and appends its outcome (`ToolRequested` is already durable). */
export const runHandler = (
  env: StepEnv,
  tool: Tool,
  args: unknown,
  key: string,
  idempotencyKey: string,
  info: ToolCallInfo,
  notes: Array<EventPayload>
) =>
  Effect.gen(function*() {
    yield* env.checkOwnership(tool.name)
    const handlerContext = {
      runId: env.runId,
      tenant: env.tenant,
      idempotencyKey,
      stepKey: key,
      fence: env.options.ownerEpoch,
      signal: env.ownership.signal,
      lease: env.ownership.lease
    }
    const result = yield* Effect.either(tool.invoke(args, handlerContext))
    const encoded = Either.flatMap(result, (r) => tool.encodeResult(r))
    if (Either.isLeft(encoded)) {
      const error = encoded.left
      if (error._tag === "WaitingOnRun") {
        // Not an outcome: the call waits on a run in doubt, so this run waits too, naming the path to it.
        const waitingOn = error.path
        yield* env.append(key, [...notes, { _tag: "ReconciliationRequired", tool: tool.name, idempotencyKey, waitingOn }])
        return yield* env.halt({ _tag: "NeedsReconciliation", stepKey: key, tool: tool.name, waitingOn })
      }
      if (error._tag === "ToolOutcomeUnknown" && !tool.idempotent) {
        // The call may have acted: in doubt, as after a crash; a person settles it (`reconcile`).
        yield* env.append(key, [...notes, { _tag: "ReconciliationRequired", tool: tool.name, idempotencyKey }])
        return yield* env.halt({ _tag: "NeedsReconciliation", stepKey: key, tool: tool.name })
      }
      if (error._tag === "ToolOutcomeUnknown") {
        // An idempotent call is safe to repeat: a tool error the model or the code may retry.
        yield* env.append(key, [...notes, { _tag: "ToolFailed", tool: tool.name, kind: "tool_error", error: error.message }])
        return { ok: false, error: new Errors.ToolError({ tool: tool.name, reason: error.message }) } satisfies ToolOutcome
      }
      if (error._tag === "PolicyDenied") {
        // Denied by the tool itself, as it ran: logged as a denial, with its reason.
        yield* env.append(key, [
          ...notes,
          { _tag: "PolicyDenied", tool: tool.name, reason: error.reason },
          { _tag: "ToolFailed", tool: tool.name, kind: "denied", error: error.reason }
        ])
        // The same error a replay of the log gives.
        return { ok: false, error: new Errors.PolicyDenied({ tool: tool.name, reason: error.reason }) } satisfies ToolOutcome
      }
      yield* env.append(key, [...notes, { _tag: "ToolFailed", tool: tool.name, kind: error.timedOut === true ? "timeout" : "tool_error", error: error.reason }])
      return { ok: false, error } satisfies ToolOutcome
    }
    const context = env.callContext(key, notes)
    const after = yield* Interceptors.run(env.deps.interceptors, "after", encoded.right, (i) =>
      i.afterTool === undefined ? undefined : (json) => i.afterTool!(info, json, context))
    if (after._tag === "Refused") {
      const error = after.error
      if (error._tag === "BudgetExceeded") return yield* env.budgetExceeded(key, "after_call", notes)
      yield* env.append(key, [...notes, { _tag: "ToolFailed", tool: tool.name, kind: error._tag === "PolicyDenied" ? "denied" : "tool_error", error: error.reason }])
      return { ok: false, error } satisfies ToolOutcome
    }
    yield* env.append(key, [...notes, { _tag: "ToolCompleted", tool: tool.name, result: after.value }])
    return { ok: true, json: after.value } satisfies ToolOutcome
  })
