/**
 * What every step of an execution shares: its dependencies and options (`executionOptions.ts`), the replay cursor,
 * the ledger, ownership, the lineage's spend, and `halt`. Kernel faults (a conflicting writer, a store failure,
 * non-determinism) and suspensions (a pause, an in-doubt tool) stop the execution through `halt`, which no user
 * error handler can swallow: `halted` is checked again when the code returns.
 */
import * as Effect from "effect/Effect"
import type { ApprovalRequest } from "../Approval.js"
import * as Errors from "../Errors.js"
import type { Event, EventPayload, WaitingOn } from "../Event.js"
import type { CallContext } from "../Middleware.js"
import type { Deps, ExecutionOptions } from "./executionOptions.js"
import * as HandlersInFlight from "./handlersInFlight.js"
import type { Ledger } from "./ledger.js"
import type { Ownership } from "./ownership.js"
import type { ReplayCursor, Resolved } from "./replayCursor.js"
import { describe } from "./replayCursor.js"
import { Renders } from "./renders.js"
import * as Tracing from "./tracing.js"

/** Faults that end an execution without writing anything: the run stays resumable. */
export type Fault =
  | Errors.SequenceConflict
  | Errors.OwnershipLost
  | Errors.StoreError
  | Errors.NonDeterminism
  | Errors.InvalidHumanResponse
  | Errors.InvalidInput
  | Errors.InvalidRunState
  | Errors.LogTampered

export type Halt =
  | {
    readonly _tag: "Paused"
    readonly ticket: string
    readonly reason: string
    /** A signal wait's deadline: resume the run then (a worker queues its task for it). */
    readonly wakeAt?: number | undefined
    /** Set when the run waits for a tool call's approval (the ticket is its id). */
    readonly approval?: ApprovalRequest | undefined
  }
  | {
    readonly _tag: "NeedsReconciliation"
    readonly stepKey: string
    readonly tool: string
    /** Set when the step waits on another run in doubt: the path down to the step that needs a person. */
    readonly waitingOn?: ReadonlyArray<WaitingOn> | undefined
  }
  | { readonly _tag: "Fault"; readonly error: Fault }
  | { readonly _tag: "Failed"; readonly error: Errors.BudgetExceeded | Errors.BudgetUnpriced }
  /** `ctx.continueAsNew(input)`: the run ends and continues as a new run with `input` (see `continueAsNew.ts`). */
  | { readonly _tag: "Continued"; readonly input: unknown }

/** How an execution stops: `halt(h)` ends its code (interrupting it) once `h` is recorded as how it ended (`halted`). */
const halts = (cursor: ReplayCursor, handlers: ReturnType<typeof HandlersInFlight.make>) => {
  let halted: Halt | undefined
  // The branches a waiting handover cut off stop too, once the calls in flight have ended (`ReplayCursor.handedOver`).
  const stop = Effect.suspend(() => {
    cursor.handedOver()
    return Effect.interrupt
  })
  const halting = (h: Halt): Effect.Effect<never> =>
    Effect.suspend(() => {
      halted ??= h
      // A suspension (a pause, a call in doubt, a handover) lets the calls other branches are making end and be logged
      // first: cut off, a call that acted would be left in doubt (or, idempotent, made again) with no crash at all.
      if (h._tag === "Paused" || h._tag === "NeedsReconciliation" || h._tag === "Continued") return Effect.zipRight(handlers.othersEnded, stop)
      return stop
    })
  const halt = (h: Halt): Effect.Effect<never> =>
    Effect.suspend((): Effect.Effect<never> => {
      if (h._tag !== "Continued" || halted !== undefined) return halting(h)
      // A second branch's handover, while the first waits: the first cut it off (it called first), as it would have;
      // if the first is given up (interrupted), this one goes on.
      const pending = cursor.handoverPending()
      if (pending !== undefined) return Effect.flatMap(pending, (handedOver) => (handedOver ? Effect.interrupt : halt(h)))
      // A handover first lets the other branches consume the steps the log holds (`ReplayCursor.othersConsumed`): the
      // execution is halted only then, since a halted execution's steps halt their branches.
      return Effect.zipRight(cursor.othersConsumed, halting(h))
    })
  return { halt, halted: () => halted }
}

export const make = (
  deps: Deps,
  options: ExecutionOptions,
  cursor: ReplayCursor,
  ledger: Ledger,
  ownership: Ownership,
  forked: () => boolean
) => {
  const { runId, tenant } = options
  // Tool handlers running: a suspension lets the other branches' calls end and be logged first.
  const handlers = HandlersInFlight.make(forked)
  const { halt, halted } = halts(cursor, handlers)
  // Whether this execution's spans are exported: decided at its first span, not asked again at every step.
  const spans = Tracing.decideOnce()
  let spentUsd = options.spentUsd

  const fault = (error: Fault) => halt({ _tag: "Fault", error })

  /**
   * Appends a step's batch (under an `artana.append` span); a failure halts the execution. What the batch decided
   * (a denial, a budget stop, middleware notes' counts) annotates the step's span.
   */
  const append = (stepKey: string, payloads: ReadonlyArray<EventPayload>): Effect.Effect<void> =>
    Tracing.append(stepKey, payloads, ledger.appendOr(stepKey, payloads, fault), spans)

  /**
   * `next()` when this execution still owns the run, else a halt (`OwnershipLost`): nothing may start in its name.
   * Called as the step runs (a tool step's request and handler are built as they run): the lease's clock is read in
   * place (one node), and without a lease only the signal counts, checked here and now (no node at all).
   */
  const owned = <A>(tool: string, next: () => Effect.Effect<A>): Effect.Effect<A> => {
    const go = (now: number): Effect.Effect<A> => {
      const lost = ownership.lostAt(tool, now)
      return lost === undefined ? next() : fault(lost)
    }
    return ownership.timed ? Effect.clockWith((clock) => go(clock.unsafeCurrentTimeMillis())) : go(0)
  }

  /** Ends the execution over budget; `costUsd`: what the call that crossed it was billed, when no other event says. */
  const budgetExceeded = (stepKey: string, phase: "before_call" | "during_call" | "after_call", before: ReadonlyArray<EventPayload>, costUsd?: number) =>
    Effect.gen(function*() {
      const error = new Errors.BudgetExceeded({ runId, limitUsd: tenant.budgetUsdLimit, spentUsd })
      yield* append(stepKey, [...before, { _tag: "BudgetExceeded", limitUsd: tenant.budgetUsdLimit, spentUsd, phase, ...(costUsd !== undefined && costUsd > 0 ? { costUsd } : {}) }])
      return yield* halt({ _tag: "Failed", error })
    })

  /** A pending lookup, resolved by reading more of the log; a failure to read it halts the execution. */
  const loaded = <R = Resolved>(lookup: { readonly next: Effect.Effect<R, Fault> }): Effect.Effect<R> => Effect.catchAll(lookup.next, fault)

  /**
   * Looks the step up in the log and answers it: a divergence halts the execution, a recorded step goes to `recorded`
   * with its events, a new one to `fresh` (more of the log is read first when the lookup needs it).
   */
  const answer = <A, E>(
    key: string,
    actual: () => string,
    recorded: (events: ReadonlyArray<Event>) => Effect.Effect<A, E>,
    fresh: () => Effect.Effect<A, E>
  ): Effect.Effect<A, E> => {
    const go = (found: Resolved): Effect.Effect<A, E> =>
      found._tag === "Diverged" ? fault(found.error) : found._tag === "Recorded" ? recorded(found.events) : fresh()
    const found = cursor.lookup(key, actual)
    return found._tag === "Pending" ? Effect.flatMap(loaded(found), go) : go(found)
  }

  return {
    deps,
    options,
    runId,
    tenant,
    mode: options.mode,
    cursor,
    ownership,
    halted,
    /** The seq of the run's last event, as this execution wrote or loaded it. */
    head: () => ledger.head().seq,
    halt,
    fault,
    append,
    loaded,
    answer,
    /** The step's events differ from what the code asks for. */
    mismatch: (key: string, recorded: ReadonlyArray<Event>, actual: string) =>
      fault(new Errors.NonDeterminism({ runId, stepKey: key, expected: describe(recorded), actual })),
    /** Fails (halting) when this execution may no longer own the run: nothing may start in its name. */
    checkOwnership: (tool: string): Effect.Effect<void> => Effect.suspend(() => owned(tool, () => Effect.void)),
    owned,
    /** Runs a tool handler and the logging of its outcome (see `handlersInFlight.ts`); call it as the handler is about to run. */
    handler: handlers.handler,
    /** Picks a span's effect for this execution (see `Tracing.decideOnce`). */
    spans,
    /** The texts its model requests' objects were rendered to (`renders.ts`): for the request's hash, and as stored. */
    renders: new Renders(),
    spentUsd: () => spentUsd,
    spend: (usd: number) => void (spentUsd += usd),
    /** Raises the spend to the lineage's, read again (sub-runs of the same root spend on the same budget). */
    rereadSpend: (lineage: number) => void (spentUsd = Math.max(spentUsd, lineage)),
    budgetExceeded,
    /** What interceptors know of the call; their notes go to `notes`, written with the call's events. */
    callContext: (stepKey: string, notes: Array<EventPayload>): CallContext => ({
      runId,
      rootRunId: options.rootRunId,
      tenant,
      stepKey,
      spentUsd,
      note: (middleware, note, data) => Effect.sync(() => void notes.push({ _tag: "MiddlewareNote", middleware, note, data }))
    })
  }
}

export type StepEnv = ReturnType<typeof make>
