/**
 * The tool step: a recorded call returns its logged outcome; one in doubt (requested, then a crash) runs again
 * when the tool is idempotent, else waits for a person; a new one is checked (known, offered, allowed), passed
 * through the `beforeTool` hooks, made durable as `ToolRequested`, and then run (see `toolHandler.ts`).
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Approval from "../Approval.js"
import * as Errors from "../Errors.js"
import type { Event, EventPayload } from "../Event.js"
import type { ToolCallInfo } from "../Middleware.js"
import { hasCapability } from "../Tenant.js"
import type { Tool } from "../Tool.js"
import { canonicalJson } from "./hash.js"
import * as Interceptors from "./interceptors.js"
import { leadOf, type Resolved } from "./replayCursor.js"
import type { StepEnv } from "./stepEnv.js"
import { runHandler, type ToolOutcome } from "./toolHandler.js"
import * as Tracing from "./tracing.js"

export interface ToolCallRequest {
  readonly name: string
  /** The arguments as JSON text. */
  readonly arguments: string
  readonly toolCallId?: string | undefined
  readonly key?: string | undefined
  readonly value?: Tool | undefined
  /** Tools the model was offered (chat), or undefined (code may call any registered tool). */
  readonly offered?: ReadonlySet<string> | undefined
}

type Failure = Extract<ToolOutcome, { ok: false }>["error"]
type ToolRequestedPayload = Extract<EventPayload, { _tag: "ToolRequested" }>
type ApprovalRequestedPayload = Extract<EventPayload, { _tag: "ApprovalRequested" }>
/** A call past the hooks, its arguments decoded, ready to be requested. */
interface Ready {
  readonly _tag: "Ready"
  readonly info: ToolCallInfo
  readonly args: unknown
  readonly notes: ReadonlyArray<EventPayload>
}
type Prepared = Ready | { readonly _tag: "Done"; readonly outcome: ToolOutcome }
const done = (outcome: ToolOutcome): Prepared => ({ _tag: "Done", outcome })

/** Arguments given by code match the logged ones: the same text, or the same JSON in another key order. */
const sameArguments = (logged: string, given: string): boolean => {
  if (logged === given) return true
  try {
    return canonicalJson(JSON.parse(logged)) === canonicalJson(JSON.parse(given))
  } catch {
    return false
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
    case "rejected":
      return { ok: false, error: new Errors.ApprovalRejected({ tool: p.tool, reason: p.error }) }
    case "tool_error":
    case "timeout":
      return { ok: false, error: new Errors.ToolError({ tool: p.tool, reason: p.error, timedOut: p.kind === "timeout" }) }
  }
}

/** The outcome a tool step's events record, if they record one. */
const outcomeOf = (recorded: ReadonlyArray<Event>, availableTools: () => ReadonlyArray<string>): ToolOutcome | undefined => {
  const requested = recorded[0]!.payload
  if (requested._tag !== "ToolRequested") return undefined
  for (let i = recorded.length - 1; i >= 1; i--) {
    const p = recorded[i]!.payload
    if (p._tag === "ToolCompleted") return { ok: true, json: p.result }
    if (p._tag === "ToolFailed") return failureOf(p, requested, availableTools())
  }
  return undefined
}

/** The policy's decision on a call, by its outcome (a call paused for approval ends in the span's interruption). */
const decisionOf = (outcome: ToolOutcome): string => {
  if (outcome.ok) return "allowed"
  switch (outcome.error._tag) {
    case "PolicyDenied":
      return "denied"
    case "UnknownTool":
      return "unknown_tool"
    case "InvalidToolArguments":
      return "invalid_arguments"
    case "ApprovalRejected":
      return "rejected"
    default:
      return "allowed"
  }
}

/** A live tool step under its `artana.tool` span: the tool, its idempotency, the decision and the outcome. */
const traced = (call: ToolCallRequest, key: string, idempotencyKey: string, tool: Tool | undefined, effect: Effect.Effect<ToolOutcome>) =>
  Tracing.span(
    "artana.tool",
    {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": call.name,
      "artana.step_key": key,
      "artana.tool.idempotent": tool?.idempotent ?? false,
      "artana.tool.idempotency_key": idempotencyKey
    },
    effect,
    {
      attributes: (outcome) => ({ "artana.tool.decision": decisionOf(outcome), "artana.tool.outcome": outcome.ok ? "ok" : outcome.error._tag }),
      content: (outcome) => ({
        "gen_ai.tool.call.arguments": call.arguments,
        ...(outcome.ok ? { "gen_ai.tool.call.result": Tracing.json(outcome.json) } : { "artana.tool.error": outcome.error.message })
      })
    }
  )

export const make = (env: StepEnv) => {
  const { deps, tenant, runId } = env
  const availableTools = () => deps.tools.list().map((t) => t.name)
  /** Whether any interceptor has a `beforeTool` hook: a kernel without one skips the chain. */
  const hooksBefore = deps.interceptors.some((i) => i.beforeTool !== undefined)

  /** Runs the handler again for a logged request, with its logged arguments and idempotency key. */
  const rerun = (tool: Tool, key: string, first: Extract<EventPayload, { _tag: "ToolRequested" }>): Effect.Effect<ToolOutcome> => {
    const args = tool.decodeArguments(first.arguments)
    if (Either.isLeft(args)) return Effect.succeed<ToolOutcome>({ ok: false, error: args.left })
    const info = { tool: first.tool, requiresCapability: tool.requiresCapability, arguments: first.arguments }
    return runHandler(env, tool, args.right, key, first.idempotencyKey, info, [])
  }

  /** A call requested, with no outcome logged: it waited on another run, or it is in doubt. */
  const inDoubt = (call: ToolCallRequest, key: string, recorded: ReadonlyArray<Event>, tool: Tool | undefined): Effect.Effect<ToolOutcome> =>
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
        return rerun(tool, key, first)
      }
      // In doubt: requested, no outcome.
      if (marker !== undefined || tool === undefined || !tool.idempotent) {
        const waits = env.halt({ _tag: "NeedsReconciliation", stepKey: key, tool: call.name })
        if (marker !== undefined) return waits
        return Effect.zipRight(env.append(key, [{ _tag: "ReconciliationRequired", tool: call.name, idempotencyKey: first.idempotencyKey }]), waits)
      }
      if (env.mode === "replay") {
        return env.fault(new Errors.InvalidRunState({ runId, status: `in doubt at step ${key}`, expected: "settled (a replay runs no tool)" }))
      }
      return rerun(tool, key, first)
    })

  /** The `ToolRequested` of a call at `key`, with `argumentsText` (before any hook). */
  const requestedOf = (call: ToolCallRequest, key: string, argumentsText: string): ToolRequestedPayload => ({
    _tag: "ToolRequested",
    tool: call.name,
    arguments: argumentsText,
    idempotencyKey: `${runId}/${key}`,
    ...(call.toolCallId === undefined ? {} : { toolCallId: call.toolCallId })
  })

  /** Logs a call that ends before its handler (refused, invalid) with its request, as one batch. */
  const refused = (key: string, requested: ToolRequestedPayload, payloads: ReadonlyArray<EventPayload>, error: Failure) =>
    Effect.as(env.append(key, [requested, ...payloads]), { ok: false, error } satisfies ToolOutcome)

  /**
   * Passes the call through the `beforeTool` hooks and decodes the arguments they give: `Ready` to run, or `Done`
   * (refused or invalid, logged with its request). No generator: this runs once per live tool step.
   */
  const prepare = (call: ToolCallRequest, key: string, tool: Tool, requested: ToolRequestedPayload): Effect.Effect<Prepared> => {
    const notes: Array<EventPayload> = []
    const given: ToolCallInfo = { tool: call.name, requiresCapability: tool.requiresCapability, arguments: requested.arguments }
    if (!hooksBefore) return decoded(call, key, tool, requested, given, notes)
    const context = env.callContext(key, notes)
    return Effect.flatMap(
      Interceptors.run(deps.interceptors, "before", given, (i) => i.beforeTool === undefined ? undefined : (info) => i.beforeTool!(info, context)),
      (before): Effect.Effect<Prepared> => {
        if (before._tag === "Passed") return decoded(call, key, tool, requested, before.value, notes)
        const error = before.error
        if (error._tag === "BudgetExceeded") return env.budgetExceeded(key, "before_call", [requested, ...notes])
        return Effect.map(refused(key, requested, [
          ...notes,
          { _tag: "PolicyDenied", tool: call.name, reason: error.reason, middleware: before.interceptor.name },
          { _tag: "ToolFailed", tool: call.name, kind: "denied", error: error.reason }
        ], error), done)
      }
    )
  }

  /** The call's arguments (as the hooks left them) decoded: `Ready`, or `Done` when invalid (logged with its request). */
  const decoded = (call: ToolCallRequest, key: string, tool: Tool, requested: ToolRequestedPayload, info: ToolCallInfo, notes: Array<EventPayload>): Effect.Effect<Prepared> => {
    const args = tool.decodeArguments(info.arguments)
    if (Either.isRight(args)) return Effect.succeed<Prepared>({ _tag: "Ready", info, args: args.right, notes })
    const error = args.left
    return Effect.map(refused(key, requested, [...notes, { _tag: "ToolFailed", tool: call.name, kind: "invalid_arguments", error: error.reason, path: error.path }], error), done)
  }

  /** Makes a prepared call durable (`ToolRequested`, with the arguments the hooks gave) and runs its handler. */
  const request = (tool: Tool, key: string, requested: ToolRequestedPayload, ready: Ready): Effect.Effect<ToolOutcome> => {
    const { info, notes } = ready
    const logged: EventPayload = { ...requested, arguments: info.arguments }
    // A call requested by an owner that lost the run would only leave the next owner a call in doubt.
    return Effect.flatMap(env.checkOwnership(tool.name), () => {
      if (tool.idempotent && (tool.durability ?? deps.idempotentToolDurability) === "one-commit") {
        // One commit: the request goes to the log with the outcome. A crash mid-handler leaves no trace of the call,
        // so the next execution makes it again, with the same idempotency key.
        return runHandler(env, tool, ready.args, key, requested.idempotencyKey, info, [logged, ...notes])
      }
      return Effect.zipRight(env.append(key, [logged, ...notes]), runHandler(env, tool, ready.args, key, requested.idempotencyKey, info, []))
    })
  }

  /** The run pauses for a person's decision on a prepared call: `ApprovalRequested` ends the batch (the run's head). */
  const askApproval = (call: ToolCallRequest, key: string, tool: Tool, ready: Ready) =>
    Effect.gen(function*() {
      const asked = {
        _tag: "ApprovalRequested",
        approvalId: Approval.makeId(runId),
        tool: call.name,
        arguments: ready.info.arguments,
        ...(call.toolCallId === undefined ? {} : { toolCallId: call.toolCallId }),
        ...(tool.approvers === undefined ? {} : { approvers: tool.approvers })
      } as const
      yield* Tracing.annotate(() => ({ "artana.tool.decision": "approval_requested", "artana.approval_id": asked.approvalId }))
      yield* env.append(key, [...ready.notes, asked])
      return yield* pausedFor(key, asked)
    })

  const pausedFor = (key: string, asked: ApprovalRequestedPayload) => {
    const approval = Approval.requestOf(key, asked)
    return env.halt({ _tag: "Paused", ticket: asked.approvalId, reason: Approval.reasonOf(approval), approval })
  }

  /** A call the log does not hold: checked, passed through the `beforeTool` hooks, approved if it must be, made durable, then run. */
  const newCall = (call: ToolCallRequest, key: string, tool: Tool | undefined): Effect.Effect<ToolOutcome> =>
    Effect.suspend(() => {
      const requested = requestedOf(call, key, call.arguments)
      if (tool === undefined || (call.offered !== undefined && !call.offered.has(call.name) && hasCapability(tenant, tool.requiresCapability))) {
        const error = new Errors.UnknownTool({ tool: call.name, available: call.offered === undefined ? availableTools() : [...call.offered] })
        return refused(key, requested, [{ _tag: "ToolFailed", tool: call.name, kind: "unknown_tool", error: error.message }], error)
      }
      if (!hasCapability(tenant, tool.requiresCapability)) {
        const reason = `tenant ${tenant.tenantId} lacks capability "${tool.requiresCapability}"`
        const error = new Errors.PolicyDenied({ tool: call.name, reason, capability: tool.requiresCapability })
        return refused(key, requested, [
          { _tag: "PolicyDenied", tool: call.name, reason, ...(tool.requiresCapability === undefined ? {} : { capability: tool.requiresCapability }) },
          { _tag: "ToolFailed", tool: call.name, kind: "denied", error: reason }
        ], error)
      }
      return Effect.flatMap(prepare(call, key, tool, requested), (prepared): Effect.Effect<ToolOutcome> => {
        if (prepared._tag === "Done") return Effect.succeed(prepared.outcome)
        if (tool.needsApproval === undefined) return request(tool, key, requested, prepared)
        return Effect.flatMap(
          tool.needsApproval(prepared.args, { runId, tenant, stepKey: key }),
          (needsApproval) => needsApproval ? askApproval(call, key, tool, prepared) : request(tool, key, requested, prepared)
        )
      })
    })

  /**
   * A call logged as waiting for approval: still waiting (the run pauses again, writing nothing), rejected (the logged
   * rejection), or approved: its logged call, or, when the decision is the log's last word, the call made now with the
   * approved arguments (edited ones pass the `beforeTool` hooks and are decoded again).
   */
  const approvalStep = (call: ToolCallRequest, key: string, recorded: ReadonlyArray<Event>, tool: Tool | undefined): Effect.Effect<ToolOutcome> =>
    Effect.suspend(() => {
      const at = recorded.findIndex((e) => e.payload._tag === "ApprovalRequested")
      const asked = recorded[at]!.payload
      if (asked._tag !== "ApprovalRequested") return env.mismatch(key, recorded, `a call to tool "${call.name}"`)
      const decision = recorded.slice(at + 1).find((e) => e.payload._tag === "ApprovalDecided")
      if (decision === undefined || decision.payload._tag !== "ApprovalDecided") return pausedFor(key, asked)
      const decided = decision.payload
      if (decided.decision === "rejected") {
        const error = new Errors.ApprovalRejected({ tool: call.name, reason: decided.reason ?? "rejected", approver: decided.approver })
        return Effect.succeed<ToolOutcome>({ ok: false, error })
      }
      const after = recorded.slice(recorded.indexOf(decision) + 1)
      const requestedAt = after.findIndex((e) => e.payload._tag === "ToolRequested")
      if (requestedAt >= 0) {
        const made = after.slice(requestedAt)
        const outcome = outcomeOf(made, availableTools)
        return outcome !== undefined ? Effect.succeed(outcome) : inDoubt(call, key, made, tool)
      }
      if (env.mode === "replay") {
        return env.fault(new Errors.InvalidRunState({ runId, status: `approved at step ${key}, its call not made yet`, expected: "settled (a replay runs no tool)" }))
      }
      const requested = requestedOf(call, key, decided.arguments ?? asked.arguments)
      return traced(call, key, requested.idempotencyKey, tool, approvedCall(call, key, tool, requested, decided.arguments, asked.arguments))
    })

  /** An approved call made now, with the approved arguments (edited ones pass the `beforeTool` hooks). */
  const approvedCall = (call: ToolCallRequest, key: string, tool: Tool | undefined, requested: ToolRequestedPayload, edited: string | undefined, asked: string): Effect.Effect<ToolOutcome> =>
    Effect.suspend(() => {
      if (tool === undefined) {
        const error = new Errors.UnknownTool({ tool: call.name, available: availableTools() })
        return refused(key, requested, [{ _tag: "ToolFailed", tool: call.name, kind: "unknown_tool", error: error.message }], error)
      }
      if (edited !== undefined) {
        // Edited by a person: the hooks see them (a policy may refuse them) before they are decoded and run.
        return Effect.flatMap(prepare(call, key, tool, requested), (p) => (p._tag === "Done" ? Effect.succeed(p.outcome) : request(tool, key, requested, p)))
      }
      const args = tool.decodeArguments(asked)
      if (Either.isLeft(args)) return refused(key, requested, [{ _tag: "ToolFailed", tool: call.name, kind: "invalid_arguments", error: args.left.reason, path: args.left.path }], args.left)
      const info: ToolCallInfo = { tool: call.name, requiresCapability: tool.requiresCapability, arguments: asked }
      return request(tool, key, requested, { _tag: "Ready", info, args: args.right, notes: [] })
    })

  /** A tool step. The common replay case (a logged outcome) is answered without entering a generator. */
  const step = (call: ToolCallRequest): Effect.Effect<ToolOutcome> =>
    Effect.suspend(() => {
      const halted = env.halted()
      if (halted !== undefined) return env.halt(halted)
      const key = env.cursor.nextKey("tool", call.key)
      const actual = () => `a call to tool "${call.name}" with ${call.arguments}`
      const found = env.cursor.lookup(key, actual)
      return found._tag === "Pending" ? Effect.flatMap(env.loaded(found), (f) => stepOf(call, key, actual, f)) : stepOf(call, key, actual, found)
    })

  const stepOf = (call: ToolCallRequest, key: string, actual: () => string, found: Resolved): Effect.Effect<ToolOutcome> => {
    if (found._tag === "Diverged") return env.fault(found.error)
    const toolOf = () => call.value ?? deps.tools.get(call.name)
    if (found._tag === "New") return traced(call, key, `${runId}/${key}`, toolOf(), newCall(call, key, toolOf()))
    const recorded = found.events
    const first = leadOf(recorded).payload
    if (first._tag === "ApprovalRequested") {
      if (first.tool !== call.name || (call.toolCallId === undefined && !sameArguments(first.arguments, call.arguments))) return env.mismatch(key, recorded, actual())
      return approvalStep(call, key, recorded, toolOf())
    }
    if (first._tag !== "ToolRequested" || first.tool !== call.name || (call.toolCallId === undefined && !sameArguments(first.arguments, call.arguments))) {
      return env.mismatch(key, recorded, actual())
    }
    const outcome = outcomeOf(recorded, availableTools)
    return outcome !== undefined ? Effect.succeed(outcome) : traced(call, key, first.idempotencyKey, toolOf(), inDoubt(call, key, recorded, toolOf()))
  }
  return step
}

export type ToolStep = ReturnType<typeof make>
