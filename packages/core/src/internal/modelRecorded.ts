/** A model call the log holds: its logged result, or the error it ended with (a denial, a budget stop, a failure). */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as Errors from "../Errors.js"
import type { Event } from "../Event.js"
import { failed, UNPRICED } from "./modelBudget.js"
import type { ModelCall } from "./modelStep.js"
import type { StepEnv } from "./stepEnv.js"

/** The logged call at `key` (a mismatch when it is not the call of `requestHash`). */
export const recordedCall = (env: StepEnv, key: string, recorded: ReadonlyArray<Event>, requestHash: string): Effect.Effect<ModelCall, Errors.ModelError | Errors.PolicyDenied> => {
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
  if (completed?._tag === "ModelCompleted") return Exit.succeed({ message: completed.message, usage: completed.usage, costUsd: completed.costUsd })
  const modelFailed = recorded.find((e) => e.payload._tag === "ModelFailed")?.payload
  if (modelFailed?._tag === "ModelFailed" && modelFailed.kind === UNPRICED) return failed(env, new Errors.BudgetUnpriced({ runId, model: first.model }))
  const kind = modelFailed?._tag === "ModelFailed" ? Schema.decodeUnknownOption(Errors.ModelError.fields.kind)(modelFailed.kind) : undefined
  return Effect.fail(new Errors.ModelError({
    kind: kind?._tag === "Some" ? kind.value : "unknown",
    reason: modelFailed?._tag === "ModelFailed" ? modelFailed.error : "the logged model call has no result",
    retryable: false
  }))
}
