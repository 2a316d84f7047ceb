/**
 * The tool step: a recorded call returns its logged outcome; one in doubt (requested, then a crash) runs again
 * when the tool is idempotent, else waits for a person; a new one is checked (known, offered, allowed), passed
 * through the `beforeTool` hooks, made durable as `ToolRequested`, and then run (see `toolHandler.ts`).
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Errors from "../Errors.js"
import type { Event, EventPayload } from "../Event.js"
import type { ToolCallInfo } from "../Middleware.js"
import { hasCapability } from "../Tenant.js"
import type { Tool } from "../Tool.js"
import { canonicalJson } from "./hash.js"
import * as Interceptors from "./interceptors.js"
import type { Resolved } from "./replayCursor.js"
import type { StepEnv } from "./stepEnv.js"
import { runHandler, type ToolOutcome } from "./toolHandler.js"

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

export const make = (env: StepEnv) => {
  const { deps, tenant, runId } = env
  const availableTools = () => deps.tools.list().map((t) => t.name)

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

  /** A call the log does not hold: checked, passed through the `beforeTool` hooks, made durable, then run. */
  const newCall = (call: ToolCallRequest, key: string, tool: Tool | undefined): Effect.Effect<ToolOutcome> =>
    Effect.gen(function*() {
      const idempotencyKey = `${runId}/${key}`
      const requested: EventPayload = {
        _tag: "ToolRequested",
        tool: call.name,
        arguments: call.arguments,
        idempotencyKey,
        ...(call.toolCallId === undefined ? {} : { toolCallId: call.toolCallId })
      }
      const fail = (payloads: ReadonlyArray<EventPayload>, error: Failure) =>
        Effect.as(env.append(key, [requested, ...payloads]), { ok: false, error } satisfies ToolOutcome)

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
      const context = env.callContext(key, notes)
      const given: ToolCallInfo = { tool: call.name, requiresCapability: tool.requiresCapability, arguments: call.arguments }
      const before = yield* Interceptors.run(deps.interceptors, "before", given, (i) =>
        i.beforeTool === undefined ? undefined : (info) => i.beforeTool!(info, context))
      if (before._tag === "Refused") {
        const error = before.error
        if (error._tag === "BudgetExceeded") return yield* env.budgetExceeded(key, "before_call", [requested, ...notes])
        return yield* fail([
          ...notes,
          { _tag: "PolicyDenied", tool: call.name, reason: error.reason, middleware: before.interceptor.name },
          { _tag: "ToolFailed", tool: call.name, kind: "denied", error: error.reason }
        ], error)
      }
      const info = before.value
      const args = tool.decodeArguments(info.arguments)
      if (Either.isLeft(args)) {
        const error = args.left
        return yield* fail([...notes, { _tag: "ToolFailed", tool: call.name, kind: "invalid_arguments", error: error.reason, path: error.path }], error)
      }
      const logged: EventPayload = { ...requested, arguments: info.arguments }
      // A call requested by an owner that lost the run would only leave the next owner a call in doubt.
      yield* env.checkOwnership(call.name)
      if (tool.idempotent && (tool.durability ?? deps.idempotentToolDurability) === "one-commit") {
        // One commit: the request goes to the log with the outcome. A crash mid-handler leaves no trace of the call,
        // so the next execution makes it again, with the same idempotency key.
        return yield* runHandler(env, tool, args.right, key, idempotencyKey, info, [logged, ...notes])
      }
      yield* env.append(key, [logged, ...notes])
      return yield* runHandler(env, tool, args.right, key, idempotencyKey, info, [])
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
    if (found._tag === "New") return newCall(call, key, toolOf())
    const recorded = found.events
    const first = recorded[0]!.payload
    if (first._tag !== "ToolRequested" || first.tool !== call.name || (call.toolCallId === undefined && !sameArguments(first.arguments, call.arguments))) {
      return env.mismatch(key, recorded, actual())
    }
    const outcome = outcomeOf(recorded, availableTools)
    return outcome !== undefined ? Effect.succeed(outcome) : inDoubt(call, key, recorded, toolOf())
  }
  return step
}

export type ToolStep = ReturnType<typeof make>
