/**
 * The approval gate: a call whose tool needs a person's approval pauses the run (`ApprovalRequested` ends the batch,
 * the run's head); once decided, a rejection is the call's outcome, and an approval makes the call, with the
 * arguments approved (edited ones pass the `beforeTool` hooks and are decoded again).
 */
import * as Effect from "effect/Effect"
import * as Approval from "../Approval.js"
import * as Errors from "../Errors.js"
import type { Event, EventPayload } from "../Event.js"
import type { Tool } from "../Tool.js"
import type { StepEnv } from "./stepEnv.js"
import { availableTools, decoded, type Prepare, unknownTool } from "./toolGate.js"
import type { ToolOutcome } from "./toolHandler.js"
import { inDoubt } from "./toolInDoubt.js"
import { budgetStopped, outcomeOf } from "./toolOutcome.js"
import { type Prepared, type Ready, request, requestedOf, type ToolCallRequest, type ToolRequestedPayload } from "./toolRequest.js"
import { traced } from "./toolSpan.js"
import * as Tracing from "./tracing.js"

type ApprovalRequestedPayload = Extract<EventPayload, { _tag: "ApprovalRequested" }>

/** The run pauses at `key` for a person's decision on the call `asked` names (writing nothing). */
export const pausedFor = (env: StepEnv, key: string, asked: ApprovalRequestedPayload) => {
  const approval = Approval.requestOf(key, asked)
  return env.halt({ _tag: "Paused", ticket: asked.approvalId, reason: Approval.reasonOf(approval), approval })
}

/** The run pauses for a person's decision on a prepared call: `ApprovalRequested` ends the batch (the run's head). */
export const ask = (env: StepEnv, call: ToolCallRequest, key: string, tool: Tool, ready: Ready) =>
  Effect.gen(function*() {
    const asked = {
      _tag: "ApprovalRequested",
      approvalId: Approval.makeId(env.runId),
      tool: call.name,
      arguments: ready.info.arguments,
      ...(call.toolCallId === undefined ? {} : { toolCallId: call.toolCallId }),
      ...(tool.approvers === undefined ? {} : { approvers: tool.approvers })
    } as const
    yield* Tracing.annotate(() => ({ "artana.tool.decision": "approval_requested", "artana.approval_id": asked.approvalId }))
    yield* env.append(key, [...ready.notes, asked])
    return yield* pausedFor(env, key, asked)
  })

/**
 * A call logged as waiting for approval: still waiting (the run pauses again, writing nothing), rejected (the logged
 * rejection), or approved: its logged call, or, when the decision is the log's last word, the call made now with the
 * approved arguments.
 */
export const recorded = (env: StepEnv, prepare: Prepare, call: ToolCallRequest, key: string, events: ReadonlyArray<Event>, tool: Tool | undefined): Effect.Effect<ToolOutcome> =>
  Effect.suspend(() => {
    const at = events.findIndex((e) => e.payload._tag === "ApprovalRequested")
    const asked = events[at]!.payload
    if (asked._tag !== "ApprovalRequested") return env.mismatch(key, events, `a call to tool "${call.name}"`)
    const decision = events.slice(at + 1).find((e) => e.payload._tag === "ApprovalDecided")
    if (decision === undefined || decision.payload._tag !== "ApprovalDecided") return pausedFor(env, key, asked)
    const decided = decision.payload
    if (decided.decision === "rejected") {
      const error = new Errors.ApprovalRejected({ tool: call.name, reason: decided.reason ?? "rejected", approver: decided.approver })
      return Effect.succeed<ToolOutcome>({ ok: false, error })
    }
    const after = events.slice(events.indexOf(decision) + 1)
    const requestedAt = after.findIndex((e) => e.payload._tag === "ToolRequested")
    if (requestedAt >= 0) {
      const made = after.slice(requestedAt)
      const outcome = outcomeOf(made, env.deps.tools)
      return outcome !== undefined ? Effect.succeed(outcome) : budgetStopped(env, made) ?? inDoubt(env, call, key, made, tool)
    }
    if (env.mode === "replay") {
      return env.fault(new Errors.InvalidRunState({ runId: env.runId, status: `approved at step ${key}, its call not made yet`, expected: "settled (a replay runs no tool)" }))
    }
    const requested = requestedOf(env.runId, call, key, decided.arguments ?? asked.arguments)
    // The span shows the call as it is made: with the approver's edit, when there is one.
    const made = decided.arguments === undefined ? call : { ...call, arguments: decided.arguments }
    return traced(made, key, requested.idempotencyKey, tool, approvedCall(env, prepare, call, key, tool, requested, decided.arguments, asked.arguments), env.spans)
  })

/** An approved call made now, with the approved arguments (edited ones pass the `beforeTool` hooks). */
const approvedCall = (
  env: StepEnv,
  prepare: Prepare,
  call: ToolCallRequest,
  key: string,
  tool: Tool | undefined,
  requested: ToolRequestedPayload,
  edited: string | undefined,
  asked: string
): Effect.Effect<ToolOutcome> =>
  Effect.suspend(() => {
    if (tool === undefined) return unknownTool(env, call, key, requested, availableTools(env))
    const made = (p: Prepared) => (p._tag === "Done" ? Effect.succeed(p.outcome) : request(env, tool, key, requested, p))
    // Edited by a person: the hooks see them (a policy may refuse them) before they are decoded and run.
    if (edited !== undefined) return Effect.flatMap(prepare(call, key, tool, requested), made)
    return Effect.flatMap(decoded(env, call, key, tool, requested, { tool: call.name, requiresCapability: tool.requiresCapability, arguments: asked }, []), made)
  })
