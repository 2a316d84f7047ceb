/**
 * What a step of the log is, read from its events: the event it leads with, a name for messages, whether its
 * events settle it, and the key and name of a patch marker. Pure functions over a step's events, shared by the
 * replay cursor, the step modules and fork.
 */
import * as Either from "effect/Either"
import type { Event, EventPayload } from "../Event.js"
import { decodeLazy, tagOf } from "./lazyPayload.js"

/** The step key of the marker `ctx.patched(id)` / `ctx.deprecatePatch(id)` log (a `StepCompleted` named `patched`). */
export const patchKey = (patchId: string): string => `${PATCH_KEY_PREFIX}${patchId}`
export const PATCH_KEY_PREFIX = "patched:"
/** The name of a patch marker's `StepCompleted` (its value is the patch id). */
export const PATCH_STEP_NAME = "patched"

/**
 * The event a step's batch leads with: its first, except for a call waiting for approval, whose batch ends with its
 * `ApprovalRequested` (the run's head while it waits) after the notes of the `beforeTool` middleware.
 */
export const leadOf = (events: ReadonlyArray<Event>): Event => {
  const first = events[0]!
  if (tagOf(first) !== "MiddlewareNote") return first
  return events.find((e) => tagOf(e) !== "MiddlewareNote") ?? first
}

/** Names a step by its first event, for messages (a lazy `ModelRequested` decoded: a divergence reads it). */
export const describe = (events: ReadonlyArray<Event>): string => {
  const decoded = events.length === 0 ? undefined : decodeLazy(leadOf(events))
  if (decoded !== undefined && Either.isLeft(decoded)) return `a model call (${decoded.left.reason})`
  const first = decoded?.right
  switch (first?._tag) {
    case "ModelRequested":
      return `a model call (request ${first.requestHash.slice(0, 12)})`
    case "ToolRequested":
      return `a call to tool "${first.tool}" with ${first.arguments}`
    case "ApprovalRequested":
      return `an approval of a call to tool "${first.tool}" with ${first.arguments}`
    case "StepCompleted":
      return `step "${first.name}"`
    case "PauseRequested":
      return `a pause for a human ("${first.reason}")`
    case "SignalAwaited":
    case "SignalReceived":
    case "SignalTimedOut":
      return `a wait for signal "${first.name}"`
    case undefined:
      return "nothing"
    default:
      return `a ${first?._tag} event`
  }
}

const has = (events: ReadonlyArray<Event>, a: EventPayload["_tag"], b?: EventPayload["_tag"], c?: EventPayload["_tag"], d?: EventPayload["_tag"]) => {
  for (let i = events.length - 1; i > 0; i--) {
    const tag = tagOf(events[i]!)
    if (tag === a || tag === b || tag === c || tag === d) return true
  }
  return false
}

/** Whether a step's recorded events settle it: nothing of it is left to run (no call in doubt, no open pause). */
export const isSettled = (events: ReadonlyArray<Event>): boolean => {
  switch (events.length === 0 ? undefined : tagOf(leadOf(events))) {
    case "ToolRequested":
    case "ApprovalRequested":
      return has(events, "ToolCompleted", "ToolFailed")
    case "PauseRequested":
      return has(events, "HumanResponded")
    case "ModelRequested":
      return has(events, "ModelCompleted", "ModelFailed", "PolicyDenied", "BudgetExceeded")
    case "SignalAwaited":
      return has(events, "SignalReceived", "SignalTimedOut")
    default:
      return true
  }
}

/**
 * Whether a step's events are a patch marker's: never "the next step" a divergence names, since code that no longer
 * calls `patched` (the patch removed) leaves its marker unconsumed, and replays on.
 */
export const isMarker = (key: string, events: ReadonlyArray<Event>): boolean => {
  if (!key.startsWith(PATCH_KEY_PREFIX)) return false
  const first = events[0]!
  if (tagOf(first) !== "StepCompleted") return false
  const payload = first.payload
  return payload._tag === "StepCompleted" && payload.name === PATCH_STEP_NAME
}
