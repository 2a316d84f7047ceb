/**
 * What the log says of a tool call: whether code asks for the call a step holds (its arguments, in any key order),
 * and the outcome the step's events record, as the error a live call would have ended with.
 */
import * as Errors from "../Errors.js"
import type { Event, EventPayload } from "../Event.js"
import type * as ToolRegistry from "../ToolRegistry.js"
import { canonicalJson } from "./hash.js"
import type { ToolOutcome } from "./toolHandler.js"
import type { StepEnv } from "./stepEnv.js"

/** Arguments given by code match the logged ones: the same text, or the same JSON in another key order. */
export const sameArguments = (logged: string, given: string): boolean => {
  if (logged === given) return true
  try {
    return canonicalJson(JSON.parse(logged)) === canonicalJson(JSON.parse(given))
  } catch {
    return false
  }
}

const failureOf = (
  p: Extract<EventPayload, { _tag: "ToolFailed" }>,
  requested: Extract<EventPayload, { _tag: "ToolRequested" }>,
  tools: ToolRegistry.Service
): ToolOutcome => {
  switch (p.kind) {
    case "denied":
      return { ok: false, error: new Errors.PolicyDenied({ tool: p.tool, reason: p.error }) }
    case "invalid_arguments":
      return { ok: false, error: new Errors.InvalidToolArguments({ tool: p.tool, path: p.path ?? "$", reason: p.error }) }
    case "unknown_tool":
      return { ok: false, error: new Errors.UnknownTool({ tool: requested.tool, available: tools.list().map((t) => t.name) }) }
    case "rejected":
      return { ok: false, error: new Errors.ApprovalRejected({ tool: p.tool, reason: p.error }) }
    case "tool_error":
    case "timeout":
      return { ok: false, error: new Errors.ToolError({ tool: p.tool, reason: p.error, timedOut: p.kind === "timeout" }) }
  }
}

/** The outcome a tool step's events record, if they record one (an unknown tool's error names the registry's tools). */
export const outcomeOf = (recorded: ReadonlyArray<Event>, tools: ToolRegistry.Service): ToolOutcome | undefined => {
  const requested = recorded[0]!.payload
  if (requested._tag !== "ToolRequested") return undefined
  for (let i = recorded.length - 1; i >= 1; i--) {
    const p = recorded[i]!.payload
    if (p._tag === "ToolCompleted") return { ok: true, json: p.result }
    if (p._tag === "ToolFailed") return failureOf(p, requested, tools)
  }
  return undefined
}

/**
 * A call an `afterTool` hook stopped over budget after its handler ran (`[ToolRequested, ..., BudgetExceeded]`, then the
 * run's `RunFailed`): settled, and the run failed there, as a model step's logged `BudgetExceeded` does; never a call in
 * doubt (a replay would refuse it as one, a resume would run it again). Undefined when the events hold no such stop.
 */
export const budgetStopped = (env: StepEnv, recorded: ReadonlyArray<Event>) => {
  for (let i = recorded.length - 1; i >= 1; i--) {
    const p = recorded[i]!.payload
    if (p._tag === "BudgetExceeded") {
      return env.halt({ _tag: "Failed", error: new Errors.BudgetExceeded({ runId: env.runId, limitUsd: p.limitUsd, spentUsd: p.spentUsd }) })
    }
  }
  return undefined
}
