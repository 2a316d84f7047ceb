/**
 * The gate a new tool call passes before it is made durable: the tool is known (and offered, in a chat), the tenant
 * holds its capability, the `beforeTool` hooks let the call through, and its arguments, as the hooks left them,
 * decode. A call refused at the gate is logged with its request, as one batch. No generator: this runs once per
 * live tool step.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Errors from "../Errors.js"
import type { EventPayload } from "../Event.js"
import type { ToolCallInfo } from "../Middleware.js"
import type { Tool } from "../Tool.js"
import * as Interceptors from "./interceptors.js"
import type { StepEnv } from "./stepEnv.js"
import { done, type Prepared, refused, type ToolCallRequest, type ToolRequestedPayload } from "./toolRequest.js"

/** The names of the registry's tools (an unknown tool's error lists them). */
export const availableTools = (env: StepEnv): ReadonlyArray<string> => env.deps.tools.list().map((t) => t.name)

/** A call to a tool that is not registered (or not offered, in a chat), logged with its request. */
export const unknownTool = (env: StepEnv, call: ToolCallRequest, key: string, requested: ToolRequestedPayload, available: ReadonlyArray<string>) => {
  const error = new Errors.UnknownTool({ tool: call.name, available })
  return refused(env, key, requested, [{ _tag: "ToolFailed", tool: call.name, kind: "unknown_tool", error: error.message }], error)
}

/** A call the tenant may not make (it lacks the tool's capability), logged as denied with its request. */
export const lacksCapability = (env: StepEnv, call: ToolCallRequest, key: string, tool: Tool, requested: ToolRequestedPayload) => {
  const { tenant } = env
  const reason = `tenant ${tenant.tenantId} lacks capability "${tool.requiresCapability}"`
  const error = new Errors.PolicyDenied({ tool: call.name, reason, capability: tool.requiresCapability })
  return refused(env, key, requested, [
    { _tag: "PolicyDenied", tool: call.name, reason, ...(tool.requiresCapability === undefined ? {} : { capability: tool.requiresCapability }) },
    { _tag: "ToolFailed", tool: call.name, kind: "denied", error: reason }
  ], error)
}

/** The call's arguments (as the hooks left them) decoded: `Ready`, or `Done` when invalid (logged with its request). */
export const decoded = (
  env: StepEnv,
  call: ToolCallRequest,
  key: string,
  tool: Tool,
  requested: ToolRequestedPayload,
  info: ToolCallInfo,
  notes: Array<EventPayload>
): Effect.Effect<Prepared> => {
  const args = tool.decodeArguments(info.arguments)
  if (Either.isRight(args)) return Effect.succeed<Prepared>({ _tag: "Ready", info, args: args.right, notes })
  const error = args.left
  return Effect.map(refused(env, key, requested, [...notes, { _tag: "ToolFailed", tool: call.name, kind: "invalid_arguments", error: error.reason, path: error.path }], error), done)
}

/**
 * `prepare` for an execution: passes a call through the `beforeTool` hooks and decodes the arguments they give,
 * `Ready` to run, or `Done` (refused or invalid, logged with its request). Whether any interceptor has a
 * `beforeTool` hook is decided once per execution: a kernel without one skips the chain.
 */
export const make = (env: StepEnv) => {
  const interceptors = env.deps.interceptors
  const hooksBefore = interceptors.some((i) => i.beforeTool !== undefined)
  return (call: ToolCallRequest, key: string, tool: Tool, requested: ToolRequestedPayload): Effect.Effect<Prepared> => {
    const notes: Array<EventPayload> = []
    const given: ToolCallInfo = { tool: call.name, requiresCapability: tool.requiresCapability, arguments: requested.arguments }
    if (!hooksBefore) return decoded(env, call, key, tool, requested, given, notes)
    const context = env.callContext(key, notes)
    return Effect.flatMap(
      Interceptors.run(interceptors, "before", given, (i) => i.beforeTool === undefined ? undefined : (info) => i.beforeTool!(info, context)),
      (before): Effect.Effect<Prepared> => {
        if (before._tag === "Passed") return decoded(env, call, key, tool, requested, before.value, notes)
        const error = before.error
        if (error._tag === "BudgetExceeded") return env.budgetExceeded(key, "before_call", [requested, ...notes])
        return Effect.map(refused(env, key, requested, [
          ...notes,
          {
            _tag: "PolicyDenied",
            tool: call.name,
            reason: error.reason,
            ...(error.capability === undefined ? {} : { capability: error.capability }),
            middleware: before.interceptor.name
          },
          { _tag: "ToolFailed", tool: call.name, kind: "denied", error: error.reason }
        ], error), done)
      }
    )
  }
}

/** An execution's `prepare` (see `make`). */
export type Prepare = ReturnType<typeof make>
