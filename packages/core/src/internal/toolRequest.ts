/**
 * A tool call's request: the `ToolRequested` the log holds for it, a call that ends before its handler (logged with
 * its request, as one batch), and a call made durable and run, two-phase (the request committed before the handler
 * starts) or, for an idempotent tool logged `one-commit`, in one commit with its outcome. No generator: this runs
 * once per live tool step.
 */
import * as Effect from "effect/Effect"
import type { EventPayload } from "../Event.js"
import type { ToolCallInfo } from "../Middleware.js"
import type { Tool } from "../Tool.js"
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

export type ToolRequestedPayload = Extract<EventPayload, { _tag: "ToolRequested" }>
export type Failure = Extract<ToolOutcome, { ok: false }>["error"]

/** A call past the hooks, its arguments decoded, ready to be requested. */
export interface Ready {
  readonly _tag: "Ready"
  readonly info: ToolCallInfo
  readonly args: unknown
  readonly notes: ReadonlyArray<EventPayload>
}

/** A call ready to be requested, or one that ended before (refused or invalid, logged with its request). */
export type Prepared = Ready | { readonly _tag: "Done"; readonly outcome: ToolOutcome }
export const done = (outcome: ToolOutcome): Prepared => ({ _tag: "Done", outcome })

/** The `ToolRequested` of a call at `key`, with `argumentsText` (before any hook). */
export const requestedOf = (runId: string, call: ToolCallRequest, key: string, argumentsText: string): ToolRequestedPayload => ({
  _tag: "ToolRequested",
  tool: call.name,
  arguments: argumentsText,
  idempotencyKey: `${runId}/${key}`,
  ...(call.toolCallId === undefined ? {} : { toolCallId: call.toolCallId })
})

/** Logs a call that ends before its handler (refused, invalid) with its request, as one batch. */
export const refused = (env: StepEnv, key: string, requested: ToolRequestedPayload, payloads: ReadonlyArray<EventPayload>, error: Failure) =>
  Effect.as(env.append(key, [requested, ...payloads]), { ok: false, error } satisfies ToolOutcome)

/** Makes a prepared call durable (`ToolRequested`, with the arguments the hooks gave) and runs its handler. */
export const request = (env: StepEnv, tool: Tool, key: string, requested: ToolRequestedPayload, ready: Ready): Effect.Effect<ToolOutcome> => {
  const { info, notes } = ready
  // The request as logged: with the arguments the hooks gave (the same object when they gave the same text).
  const logged: EventPayload = info.arguments === requested.arguments ? requested : { ...requested, arguments: info.arguments }
  const batch = notes.length === 0 ? [logged] : [logged, ...notes]
  if (tool.idempotent && (tool.durability ?? env.deps.idempotentToolDurability) === "one-commit") {
    // One commit: the request goes to the log with the outcome. A crash mid-handler leaves no trace of the call,
    // so the next execution makes it again, with the same idempotency key. (`runHandler` checks ownership first.)
    // Suspended: the ownership check runs right before the handler, not where the step's call was prepared.
    return Effect.suspend(() => runHandler(env, tool, ready.args, key, requested.idempotencyKey, info, batch))
  }
  // A call requested by an owner that lost the run would only leave the next owner a call in doubt.
  return env.owned(
    tool.name,
    // Counted from its request on: once `ToolRequested` may be durable, a suspension waits for the handler and its
    // outcome (`handlersInFlight.ts`), or the call would be left in doubt though it never started.
    () => env.handler(Effect.flatMap(env.append(key, batch), () => runHandler(env, tool, ready.args, key, requested.idempotencyKey, info, [])))
  )
}
