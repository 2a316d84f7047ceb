/**
 * A fork's overrides (`Kernel.fork`): each one a step's settling event in the prefix, its recorded result replaced by
 * the value given, in the payload that event's kind records.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { AssistantMessage } from "../Chat.js"
import * as Errors from "../Errors.js"
import type { Event, EventPayload, RunInfo } from "../Event.js"
import type * as Fork from "../Fork.js"
import type * as Json from "../Json.js"
import { firstIssue } from "../Tool.js"
import type { Cut } from "./forkCut.js"

const invalidOverride = (stepKey: string, reason: string) => new Errors.InvalidInput({ what: `override of step "${stepKey}"`, reason })

/** The payload that replaces `event` (a step's settling event) with `value` as its result. */
const replaced = (event: Event, value: Json.Json): Either.Either<EventPayload, Errors.InvalidInput> => {
  const p = event.payload
  switch (p._tag) {
    case "StepCompleted":
      return Either.right({ ...p, value })
    case "ToolCompleted":
      return Either.right({ _tag: "ToolCompleted", tool: p.tool, result: value })
    case "ToolFailed":
      // Only a call whose handler ran (its ToolRequested is logged) can be said to have returned something.
      return p.kind === "tool_error" || p.kind === "timeout"
        ? Either.right({ _tag: "ToolCompleted", tool: p.tool, result: value })
        : Either.left(invalidOverride(event.stepKey, `the call was refused (${p.kind}) before its handler ran: fork before it instead`))
    case "HumanResponded": {
      // The fork's response is nobody's that the log knows: the original responder did not give it.
      const { respondedBy: _respondedBy, ...response } = p
      return Either.right({ ...response, payload: value })
    }
    case "SignalReceived":
      return Either.right({ ...p, payload: value })
    case "ModelCompleted": {
      if (typeof value === "string") return Either.right({ ...p, message: { role: "assistant", content: value } })
      const message = Schema.decodeUnknownEither(AssistantMessage)(value)
      return Either.isLeft(message)
        ? Either.left(invalidOverride(event.stepKey, `a model step's reply is a string or an assistant message: ${firstIssue(message.left).reason}`))
        : Either.right({ ...p, message: message.right })
    }
    default:
      return Either.left(invalidOverride(event.stepKey, `its step ended with ${p._tag}, which records no result to replace`))
  }
}

/** The replacing payloads, by the seq of the event each replaces. */
export const overridesAt = (info: RunInfo, cut: Cut, overrides: Fork.ForkOverrides) =>
  Effect.gen(function*() {
    const bySeq = new Map<number, EventPayload>()
    for (const [stepKey, value] of Object.entries(overrides)) {
      const event = cut.settled.get(stepKey)
      if (event === undefined || event.seq > cut.seq) {
        return yield* invalidOverride(stepKey, `no settled step of that key in the fork's prefix (events 1..${cut.seq} of run ${info.runId})`)
      }
      bySeq.set(event.seq, yield* replaced(event, value))
    }
    return bySeq
  })
