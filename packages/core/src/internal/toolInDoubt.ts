/**
 * Reconciliation of a tool call the log holds as requested, with no outcome. A call that waited on another run in
 * doubt runs again, with the same idempotency key, once this run is resumed. A call in doubt (a crash between its
 * request and its outcome) runs again when its tool is idempotent; any other waits for a person: the run needs
 * reconciliation (`ReconciliationRequired`, logged once), and `reconcile` settles it.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Errors from "../Errors.js"
import type { Event, EventPayload } from "../Event.js"
import type { Tool } from "../Tool.js"
import type { StepEnv } from "./stepEnv.js"
import { runHandler, type ToolOutcome } from "./toolHandler.js"
import type { ToolCallRequest, ToolRequestedPayload } from "./toolRequest.js"

/** Runs the handler again for a logged request, with its logged arguments and idempotency key. */
const rerun = (env: StepEnv, tool: Tool, key: string, first: ToolRequestedPayload): Effect.Effect<ToolOutcome> => {
  const args = tool.decodeArguments(first.arguments)
  if (Either.isLeft(args)) return Effect.succeed<ToolOutcome>({ ok: false, error: args.left })
  const info = { tool: first.tool, requiresCapability: tool.requiresCapability, arguments: first.arguments }
  return runHandler(env, tool, args.right, key, first.idempotencyKey, info, [])
}

/** A call requested, with no outcome logged: it waited on another run, or it is in doubt. */
export const inDoubt = (env: StepEnv, call: ToolCallRequest, key: string, recorded: ReadonlyArray<Event>, tool: Tool | undefined): Effect.Effect<ToolOutcome> =>
  Effect.suspend(() => {
    const first = recorded[0]!.payload
    if (first._tag !== "ToolRequested") return env.mismatch(key, recorded, `a call to tool "${call.name}"`)
    let marker: EventPayload | undefined
    for (const e of recorded) if (e.payload._tag === "ReconciliationRequired") marker = e.payload
    if (marker?._tag === "ReconciliationRequired" && marker.waitingOn !== undefined && tool !== undefined) {
      // The call waited on another run in doubt. The kernel resumes this run only once that run is settled (or
      // after a crash), so the handler runs again, with the same key: it fails with `WaitingOnRun` again if
      // that run still waits.
      if (env.mode === "replay") return env.halt({ _tag: "NeedsReconciliation", stepKey: key, tool: call.name, waitingOn: marker.waitingOn })
      return rerun(env, tool, key, first)
    }
    // In doubt: requested, no outcome.
    if (marker !== undefined || tool === undefined || !tool.idempotent) {
      const waits = env.halt({ _tag: "NeedsReconciliation", stepKey: key, tool: call.name })
      if (marker !== undefined) return waits
      return Effect.zipRight(env.append(key, [{ _tag: "ReconciliationRequired", tool: call.name, idempotencyKey: first.idempotencyKey }]), waits)
    }
    if (env.mode === "replay") {
      return env.fault(new Errors.InvalidRunState({ runId: env.runId, status: `in doubt at step ${key}`, expected: "settled (a replay runs no tool)" }))
    }
    return rerun(env, tool, key, first)
  })
