/**
 * The replay cursor: the loaded log indexed by step key, walked as the code asks for steps. A lookup says whether
 * the step is recorded (its events), new (the code may run it live), or a divergence from the log.
 */
import * as Errors from "../Errors.js"
import { type Event, type EventPayload, RUN_STEP_KEY } from "../Event.js"

/** What the log says of a step the code asks for. */
export type Lookup =
  | { readonly _tag: "Recorded"; readonly events: ReadonlyArray<Event> }
  | { readonly _tag: "New" }
  | { readonly _tag: "Diverged"; readonly error: Errors.NonDeterminism }

const New: Lookup = { _tag: "New" }

/** Names a step by its first event, for messages. */
export const describe = (events: ReadonlyArray<Event>): string => {
  const first = events[0]?.payload
  switch (first?._tag) {
    case "ModelRequested":
      return `a model call (request ${first.requestHash.slice(0, 12)})`
    case "ToolRequested":
      return `a call to tool "${first.tool}" with ${first.arguments}`
    case "StepCompleted":
      return `step "${first.name}"`
    case "PauseRequested":
      return `a pause for a human ("${first.reason}")`
    case undefined:
      return "nothing"
    default:
      return `a ${first._tag} event`
  }
}

/** Whether a step's recorded events settle it: nothing of it is left to run (no call in doubt, no open pause). */
const isSettled = (events: ReadonlyArray<Event>): boolean => {
  const first = events[0]?.payload
  const has = (...tags: ReadonlyArray<EventPayload["_tag"]>) => events.some((e) => tags.includes(e.payload._tag))
  switch (first?._tag) {
    case "ToolRequested":
      return has("ToolCompleted", "ToolFailed")
    case "PauseRequested":
      return has("HumanResponded")
    case "ModelRequested":
      return has("ModelCompleted", "ModelFailed", "PolicyDenied", "BudgetExceeded")
    default:
      return true
  }
}

export const make = (runId: string, log: ReadonlyArray<Event>, mode: "live" | "replay") => {
  // The log indexed by step key; `order` is the order in which steps first appear.
  const byKey = new Map<string, Array<Event>>()
  const order: Array<string> = []
  for (const event of log) {
    if (event.stepKey === RUN_STEP_KEY) continue
    const list = byKey.get(event.stepKey)
    if (list === undefined) {
      byKey.set(event.stepKey, [event])
      order.push(event.stepKey)
    } else list.push(event)
  }
  const consumed = new Set<string>()
  // Keys of the steps this execution runs live (and so writes under).
  const written = new Set<string>()
  let cursor = 0
  let counter = 0
  const nextUnconsumed = (): string | undefined => {
    while (cursor < order.length && consumed.has(order[cursor]!)) cursor++
    return order[cursor]
  }
  const diverged = (key: string, expected: string, actual: string): Lookup => ({
    _tag: "Diverged",
    error: new Errors.NonDeterminism({ runId, stepKey: key, expected, actual })
  })

  /**
   * Finds a step's recorded events, or proves the code may run it live. Synchronous on purpose: replay calls
   * it once per step, and only a divergence needs an effect. `actual` is computed only when one is reported.
   */
  const lookup = (key: string, actual: () => string): Lookup => {
    const recorded = byKey.get(key)
    const next = nextUnconsumed()
    if (recorded !== undefined) {
      if (consumed.has(key)) return diverged(key, "a step key used once", `${actual()} reusing it`)
      // A settled step may be met out of the log's order (steps run concurrently, each under its own explicit key,
      // are logged in the order they finished); one that would run anything (a tool call in doubt, an unanswered
      // pause, a model call without a result) may not: the code changed its order, and it would run before the
      // steps that preceded it in the log.
      if (next !== key && !isSettled(recorded)) {
        return diverged(key, `${describe(byKey.get(next!)!)} at step ${next}`, `${actual()} at step ${key}`)
      }
      consumed.add(key)
      return { _tag: "Recorded", events: recorded }
    }
    // A key this execution already wrote under: the log would hold one step for two (and a replay would refuse it).
    if (written.has(key)) return diverged(key, "a step key used once", `${actual()} reusing it`)
    if (next !== undefined) return diverged(key, `${describe(byKey.get(next)!)} at step ${next}`, actual())
    if (mode === "replay") return diverged(key, "the end of the log", actual())
    written.add(key)
    return New
  }

  return {
    lookup,
    /** The step's key: the explicit one, else `<kind>:<n>` by the order in which the code asks for steps. */
    nextKey: (kind: string, explicit: string | undefined): string => {
      const index = counter++
      return explicit ?? `${kind}:${index}`
    },
    /** Steps the log holds that the code did not ask for. */
    unconsumed: nextUnconsumed,
    describeKey: (key: string) => describe(byKey.get(key) ?? [])
  }
}

export type ReplayCursor = ReturnType<typeof make>
