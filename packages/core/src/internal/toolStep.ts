/**
 * The tool step: a recorded call returns its logged outcome; one in doubt (requested, then a crash) runs again
 * when the tool is idempotent, else waits for a person (`toolInDoubt.ts`); one waiting for approval pauses again
 * or, once decided, goes on (`toolApproval.ts`); a new one passes the gate (known, offered, allowed, the
 * `beforeTool` hooks: `toolGate.ts`), is made durable as `ToolRequested`, and then run (`toolRequest.ts`,
 * `toolHandler.ts`).
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { hasCapability } from "../Tenant.js"
import type { Tool } from "../Tool.js"
import * as Answered from "./answered.js"
import { leadOf, type Resolved } from "./replayCursor.js"
import type { StepEnv } from "./stepEnv.js"
import * as ToolApproval from "./toolApproval.js"
import * as ToolGate from "./toolGate.js"
import type { ToolOutcome } from "./toolHandler.js"
import { inDoubt } from "./toolInDoubt.js"
import { budgetStopped, outcomeOf, sameArguments } from "./toolOutcome.js"
import { request, requestedOf, type ToolCallRequest } from "./toolRequest.js"
import { traced } from "./toolSpan.js"
import { payloadUnlessLazy } from "./lazyPayload.js"

export const make = (env: StepEnv) => {
  const { deps, tenant, runId } = env
  const prepare = ToolGate.make(env)

  /**
   * A call the log does not hold: checked, passed through the `beforeTool` hooks, approved if it must be, made durable,
   * then run. Built as the step runs (`step` is), so its checks are made in place, not in an effect of their own.
   */
  const newCall = (call: ToolCallRequest, key: string, tool: Tool | undefined): Effect.Effect<ToolOutcome> => {
      const requested = requestedOf(runId, call, key, call.arguments)
      if (tool === undefined || (call.offered !== undefined && !call.offered.has(call.name) && hasCapability(tenant, tool.requiresCapability))) {
        return ToolGate.unknownTool(env, call, key, requested, call.offered === undefined ? ToolGate.availableTools(env) : [...call.offered])
      }
      if (!hasCapability(tenant, tool.requiresCapability)) return ToolGate.lacksCapability(env, call, key, tool, requested)
      // Without `beforeTool` hooks the call is prepared at once (an `Exit`): what follows runs on it in place.
      return Answered.flatMap(prepare(call, key, tool, requested), (prepared): Effect.Effect<ToolOutcome> => {
        if (prepared._tag === "Done") return Effect.succeed(prepared.outcome)
        if (tool.needsApproval === undefined) return request(env, tool, key, requested, prepared)
        return Effect.flatMap(
          tool.needsApproval(prepared.args, { runId, tenant, stepKey: key }),
          (needsApproval) => needsApproval ? ToolApproval.ask(env, call, key, tool, prepared) : request(env, tool, key, requested, prepared)
        )
      })
  }

  /**
   * A tool step, begun when called: call it as the step runs (inside an effect). The common replay case (a logged
   * outcome) is answered at once, as an `Exit` (see `answered.ts`), without entering a generator.
   */
  const step = (call: ToolCallRequest): Effect.Effect<ToolOutcome> => {
    const halted = env.halted()
    if (halted !== undefined) return env.halt(halted)
    const key = env.cursor.nextKey("tool", call.key)
    const actual = () => `a call to tool "${call.name}" with ${call.arguments}`
    const found = env.cursor.lookup(key, actual)
    return found._tag === "Pending" ? Effect.flatMap(env.loaded(found), (f) => stepOf(call, key, actual, f)) : stepOf(call, key, actual, found)
  }

  const stepOf = (call: ToolCallRequest, key: string, actual: () => string, found: Resolved): Effect.Effect<ToolOutcome> => {
    if (found._tag === "Diverged") return env.fault(found.error)
    const toolOf = () => call.value ?? deps.tools.get(call.name)
    if (found._tag === "New") return traced(call, key, `${runId}/${key}`, toolOf(), newCall(call, key, toolOf()), env.spans)
    const recorded = found.events
    const first = payloadUnlessLazy(leadOf(recorded))
    if (first === undefined) return env.mismatch(key, recorded, actual())
    if (first._tag === "ApprovalRequested") {
      if (first.tool !== call.name || (call.toolCallId === undefined && !sameArguments(first.arguments, call.arguments))) return env.mismatch(key, recorded, actual())
      return ToolApproval.recorded(env, prepare, call, key, recorded, toolOf())
    }
    if (first._tag !== "ToolRequested" || first.tool !== call.name || (call.toolCallId === undefined && !sameArguments(first.arguments, call.arguments))) {
      return env.mismatch(key, recorded, actual())
    }
    const outcome = outcomeOf(recorded, deps.tools)
    const stopped = outcome === undefined ? budgetStopped(env, recorded) : undefined
    if (stopped !== undefined) return stopped
    return outcome !== undefined ? Exit.succeed(outcome) : traced(call, key, first.idempotencyKey, toolOf(), inDoubt(env, call, key, recorded, toolOf()), env.spans)
  }
  return step
}

export type ToolStep = ReturnType<typeof make>
