/** A live tool step's `artana.tool` span: the tool, its idempotency, the policy's decision and the outcome. */
import type * as Effect from "effect/Effect"
import type { Tool } from "../Tool.js"
import type { ToolOutcome } from "./toolHandler.js"
import type { ToolCallRequest } from "./toolRequest.js"
import * as Tracing from "./tracing.js"

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

/** `effect`, a live tool step, under its `artana.tool` span (its attributes built only when a tracer exports it). */
export const traced = (
  call: ToolCallRequest,
  key: string,
  idempotencyKey: string,
  tool: Tool | undefined,
  effect: Effect.Effect<ToolOutcome>,
  when?: Tracing.When
) =>
  Tracing.spanWith(
    "artana.tool",
    () => ({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": call.name,
      "artana.step_key": key,
      "artana.tool.idempotent": tool?.idempotent ?? false,
      "artana.tool.idempotency_key": idempotencyKey
    }),
    effect,
    () => ({
      attributes: (outcome) => ({ "artana.tool.decision": decisionOf(outcome), "artana.tool.outcome": outcome.ok ? "ok" : outcome.error._tag }),
      content: (outcome) => ({
        "gen_ai.tool.call.arguments": call.arguments,
        ...(outcome.ok ? { "gen_ai.tool.call.result": Tracing.json(outcome.json) } : { "artana.tool.error": outcome.error.message })
      })
    }),
    when
  )
