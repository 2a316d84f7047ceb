/**
 * Writing a fork's log (`Kernel.fork`): where the prefix ends (the last step boundary at or before the point asked
 * for), the results it replaces, and the copy itself: the source's events re-chained under the fork's id, written in
 * one transaction (`EventStore.appendPaged`) a page at a time, read from the source's verified log as they go.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Types from "effect/Types"
import { AssistantMessage } from "../Chat.js"
import * as Errors from "../Errors.js"
import { type Event, type EventPayload, type ForkedFrom, RUN_STEP_KEY, type RunInfo } from "../Event.js"
import type * as EventStore from "../EventStore.js"
import * as Fork from "../Fork.js"
import type * as Json from "../Json.js"
import { firstIssue } from "../Tool.js"
import { GENESIS_HASH, newEventHash } from "./hash.js"
import { type ReadError, verifiedPages } from "./ledger.js"
import { isSettled, leadOf } from "./replayCursor.js"

/** Events per page read from the source and written to the fork: what memory holds of the prefix at a time. */
const PAGE_SIZE = 256

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

const failure = (info: RunInfo) => (error: ReadError): Errors.RunNotFound | Errors.StoreError | Errors.LogTampered =>
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
const stepEnd = (store: EventStore.Service, auditKey: string | undefined, info: RunInfo, stepKey: string) =>
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
interface Cut {
  readonly seq: number
  readonly settled: ReadonlyMap<string, Event>
}

/**
 * The last step boundary at or before `limit`: the greatest seq after which no step is open (every step is settled,
 * or rests: see `resting`), before any event that ends the run, and where the next event (if any) is not of the same
 * step (a batch is never split: a step's notes before its lead, or after its outcome, stay with it). One pass over the
 * log up to `limit` + 1, holding only the steps still open.
 */
const boundary = (store: EventStore.Service, auditKey: string | undefined, info: RunInfo, limit: number, keys: ReadonlySet<string>) =>
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
    case "HumanResponded":
      return Either.right({ ...p, payload: value })
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
const overridesAt = (info: RunInfo, cut: Cut, overrides: Fork.ForkOverrides) =>
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

/** The fork's `RunStarted`: the source's, a root of its own lineage (no parent, no chain it continues), with `forkedFrom`. */
const forkStarted = (event: Event, forkedFrom: ForkedFrom): Either.Either<EventPayload, Errors.StoreError> => {
  if (event.payload._tag !== "RunStarted") {
    return Either.left(new Errors.StoreError({ operation: "readEvents", reason: `run ${event.runId} has no RunStarted event` }))
  }
  const { continuedFrom: _continued, forkedFrom: _forked, parentRunId: _parent, rootRunId: _root, ...started } = event.payload
  return Either.right({ ...started, forkedFrom })
}

/**
 * Copies events 1..`forkedFrom.seq` of `info` into run `forkRunId` in one transaction, a page at a time: each event
 * re-chained (a new id, the fork's run id, links and hashes of its own), the `RunStarted` the fork's (timestamped now:
 * the fork's creation), replaced results in place; every other field as recorded.
 */
const copy = (
  store: EventStore.Service,
  auditKey: string | undefined,
  info: RunInfo,
  forkRunId: string,
  forkedFrom: ForkedFrom,
  replacements: ReadonlyMap<number, EventPayload>
) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const next = Effect.mapError(verifiedPages(store, auditKey, info, { pageSize: PAGE_SIZE }), failure(info))
    let prevHash = GENESIS_HASH
    let done = false
    const page = (read: ReadonlyArray<Event>): Effect.Effect<Option.Option<EventStore.AppendRequest>, Errors.StoreError> => {
      const events: Array<Event> = []
      for (const source of read) {
        if (source.seq > forkedFrom.seq) break
        const payload = source.seq === 1 ? forkStarted(source, forkedFrom) : Either.right(replacements.get(source.seq) ?? source.payload)
        if (Either.isLeft(payload)) return Effect.fail(payload.left)
        const event: Types.Mutable<Event> = {
          eventId: crypto.randomUUID(),
          runId: forkRunId,
          tenantId: info.tenantId,
          seq: source.seq,
          timestamp: source.seq === 1 ? now : source.timestamp,
          type: payload.right._tag,
          stepKey: source.stepKey,
          payload: payload.right,
          prevHash,
          hash: ""
        }
        event.hash = newEventHash(event, auditKey)
        prevHash = event.hash
        events.push(event)
      }
      const last = events[events.length - 1]
      if (last === undefined || last.seq >= forkedFrom.seq) done = true
      return Effect.succeed(last === undefined ? Option.none() : Option.some({ runId: forkRunId, tenantId: info.tenantId, expectedSeq: events[0]!.seq - 1, events }))
    }
    const pull = Effect.suspend(() => (done ? Effect.succeed(Option.none()) : Effect.flatMap(next, Option.match({ onNone: () => Effect.succeed(Option.none()), onSome: page }))))
    return yield* store.appendPaged(pull)
  })

const sameFork = (a: ForkedFrom, b: ForkedFrom) =>
  a.runId === b.runId && a.seq === b.seq && (a.overridden ?? []).join("\u0000") === (b.overridden ?? []).join("\u0000")

/** The fork `forkRunId` if it exists: the same fork (`created: false`), else `InvalidInput` (the id is another run's). */
const existing = (store: EventStore.Service, tenantId: string, forkRunId: string, forkedFrom: ForkedFrom) =>
  Effect.gen(function*() {
    const first = yield* Effect.catchTag(store.readEvents(tenantId, forkRunId, 1, 1), "RunNotFound", () => Effect.succeed([]))
    const started = first[0]?.payload
    if (started === undefined) return undefined
    if (started._tag !== "RunStarted" || started.forkedFrom === undefined || !sameFork(started.forkedFrom, forkedFrom)) {
      return yield* new Errors.InvalidInput({
        what: "fork run id",
        reason: `run ${forkRunId} exists and is not the fork of run ${forkedFrom.runId} at seq ${forkedFrom.seq} asked for: give another forkRunId`
      })
    }
    return { runId: forkRunId, forkedFrom: started.forkedFrom, created: false } satisfies Fork.Forked
  })

const checked = (request: Fork.ForkRequest): Either.Either<void, Errors.InvalidInput> => {
  const bad = (reason: string) => Either.left(new Errors.InvalidInput({ what: "fork point", reason }))
  if (request.atSeq !== undefined) {
    return Number.isInteger(request.atSeq) && request.atSeq >= 1 ? Either.right(undefined) : bad(`atSeq must be a seq of the run (an integer from 1), not ${request.atSeq}`)
  }
  return typeof request.atStep === "string" && request.atStep.length > 0 ? Either.right(undefined) : bad("give atSeq or atStep")
}

/**
 * Writes the fork's log (runs no code): the prefix of `request.runId` up to the last step boundary at or before the
 * point asked for, with its overrides, under the fork's id, in one transaction. The same fork asked again (or written
 * meanwhile by a racing request) is returned with `created: false`.
 */
export const write = (store: EventStore.Service, auditKey: string | undefined, request: Fork.ForkRequest): Effect.Effect<Fork.Forked, Fork.ForkError> =>
  Effect.gen(function*() {
    yield* checked(request)
    const info = yield* store.getRun(request.tenantId, request.runId)
    const overrides = request.overrides ?? {}
    const limit = request.atSeq !== undefined ? Math.min(request.atSeq, info.headSeq) : yield* stepEnd(store, auditKey, info, request.atStep)
    const cut = yield* boundary(store, auditKey, info, limit, new Set(Object.keys(overrides)))
    const replacements = yield* overridesAt(info, cut, overrides)
    const overridden = Object.keys(overrides).sort()
    const forkedFrom: ForkedFrom = { runId: info.runId, seq: cut.seq, ...(overridden.length === 0 ? {} : { overridden }) }
    const forkRunId = request.forkRunId ?? Fork.forkRunId(info.runId, cut.seq, request.overrides)
    if (forkRunId === info.runId) return yield* new Errors.InvalidInput({ what: "fork run id", reason: "a fork needs an id of its own" })
    const found = yield* existing(store, info.tenantId, forkRunId, forkedFrom)
    if (found !== undefined) return found
    const written = yield* Effect.either(copy(store, auditKey, info, forkRunId, forkedFrom, replacements))
    if (Either.isRight(written)) return { runId: forkRunId, forkedFrom, created: true } satisfies Fork.Forked
    const error = written.left
    switch (error._tag) {
      case "SequenceConflict": {
        // Another request wrote a run under this id first: the same fork, or another run.
        const raced = yield* existing(store, info.tenantId, forkRunId, forkedFrom)
        if (raced !== undefined) return raced
        return yield* new Errors.StoreError({ operation: "fork", reason: `writing fork ${forkRunId} conflicted, yet no run has that id` })
      }
      case "OwnershipLost":
        return yield* new Errors.StoreError({ operation: "fork", reason: error.message })
      default:
        return yield* error
    }
  })
