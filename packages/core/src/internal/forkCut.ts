/**
 * Where a fork's prefix ends (`Kernel.fork`): the last step boundary at or before the point asked for, found in one
 * pass over the source's verified log, and the settling event of each step an override replaces.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Errors from "../Errors.js"
import { type Event, type EventPayload, RUN_STEP_KEY, type RunInfo } from "../Event.js"
import type * as EventStore from "../EventStore.js"
import { type ReadError, verifiedPages } from "./ledger.js"
import { isSettled, leadOf } from "./replayCursor.js"

/** Events per page read from the source and written to the fork: what memory holds of the prefix at a time. */
export const PAGE_SIZE = 256

/** Events that end a run: a prefix never keeps them (the fork's code ends it again, its own way). */
const ENDS = new Set<EventPayload["_tag"]>(["RunCompleted", "RunFailed", "RunContinued", "BudgetExceeded"])

/** Events whose recorded result an override may replace. */
const OVERRIDABLE = new Set<EventPayload["_tag"]>(["StepCompleted", "ToolCompleted", "ToolFailed", "ModelCompleted", "HumanResponded", "SignalReceived"])

/**
 * A step a prefix may end inside: a pause for a person, a signal wait (with or without its pause). A run rests there
 * between executions, so the fork rests there too (paused, or waiting for the signal). Any other unsettled step (a
 * model call without its reply, a tool call without its outcome, an approval requested or decided) is cut off whole.
 */
const resting = (events: ReadonlyArray<Event>): boolean => {
  const lead = leadOf(events).payload._tag
  return lead === "PauseRequested" || lead === "SignalAwaited"
}

/** A failure to read the source's log as a fork error: a log that does not match its run record's head (`InvalidRunState`) was edited. */
export const failure = (info: RunInfo) => (error: ReadError): Errors.RunNotFound | Errors.StoreError | Errors.LogTampered =>
  error._tag === "InvalidRunState" ? new Errors.LogTampered({ runId: info.runId, seq: info.headSeq, reason: error.status }) : error

/** Pulls `info`'s verified pages, calling `visit` on each event until it returns false or the log ends. */
const walk = (store: EventStore.Service, auditKey: string | undefined, info: RunInfo, visit: (event: Event) => boolean) =>
  Effect.suspend(() => {
    const next = verifiedPages(store, auditKey, info, { pageSize: PAGE_SIZE })
    const loop: Effect.Effect<void, ReadError> = Effect.flatMap(next, Option.match({
      onNone: () => Effect.void,
      onSome: (page) => {
        for (const event of page) if (!visit(event)) return Effect.void
        return loop
      }
    }))
    return Effect.mapError(loop, failure(info))
  })

/** The seq of the last event of step `stepKey` in the run's log. */
export const stepEnd = (store: EventStore.Service, auditKey: string | undefined, info: RunInfo, stepKey: string) =>
  Effect.gen(function*() {
    let last = 0
    yield* walk(store, auditKey, info, (event) => {
      if (event.stepKey === stepKey) last = event.seq
      return true
    })
    if (last === 0) return yield* new Errors.InvalidInput({ what: "fork point", reason: `run ${info.runId} has no step "${stepKey}"` })
    return last
  })

/** Where the prefix ends, and the settling event of each step to override (its last, up to `limit`). */
export interface Cut {
  readonly seq: number
  readonly settled: ReadonlyMap<string, Event>
}

/**
 * The last step boundary at or before `limit`: the greatest seq after which no step is open (every step is settled,
 * or rests: see `resting`), before any event that ends the run, and where the next event (if any) is not of the same
 * step (a batch is never split: a step's notes before its lead, or after its outcome, stay with it). One pass over the
 * log up to `limit` + 1, holding only the steps still open.
 */
export const boundary = (store: EventStore.Service, auditKey: string | undefined, info: RunInfo, limit: number, keys: ReadonlySet<string>) =>
  Effect.gen(function*() {
    const open = new Map<string, Array<Event>>()
    const settled = new Map<string, Event>()
    let seq = 0
    // A boundary after an event, confirmed once the event after it is seen (or the log ends).
    let candidate: { readonly seq: number; readonly stepKey: string; readonly rests: boolean } | undefined
    yield* walk(store, auditKey, info, (event) => {
      if (candidate !== undefined) {
        if (event.stepKey !== candidate.stepKey || candidate.stepKey === RUN_STEP_KEY || candidate.rests) seq = candidate.seq
        candidate = undefined
      }
      if (event.seq > limit || ENDS.has(event.payload._tag)) return false
      if (event.stepKey !== RUN_STEP_KEY) {
        const events = open.get(event.stepKey) ?? []
        events.push(event)
        open.set(event.stepKey, events)
        if (isSettled(events)) {
          open.delete(event.stepKey)
          if (keys.has(event.stepKey) && OVERRIDABLE.has(event.payload._tag)) settled.set(event.stepKey, event)
        }
      }
      for (const events of open.values()) if (!resting(events)) return true
      candidate = { seq: event.seq, stepKey: event.stepKey, rests: open.has(event.stepKey) }
      return true
    })
    if (candidate !== undefined) seq = candidate.seq
    return { seq, settled } satisfies Cut
  })
