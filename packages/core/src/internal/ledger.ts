/**
 * The ledger: a run's hash-chained log as an execution writes and reads it. `make` appends batches after the
 * execution's head, each event's hash chained to the one before and the batch fenced by the execution's owner
 * epoch; `readVerified` reads a log and checks its chain against the run record's head before anything uses it.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Types from "effect/Types"
import * as Errors from "../Errors.js"
import type { Event, EventPayload, RunInfo } from "../Event.js"
import type * as EventStore from "../EventStore.js"
import { verifyEvents } from "../Verify.js"
import { GENESIS_HASH, newEventHash } from "./hash.js"

/** What an append fails with: the store refused the batch, or the execution writes nothing (a replay). */
export type AppendError = Errors.InvalidRunState | Errors.SequenceConflict | Errors.OwnershipLost | Errors.StoreError

export interface LedgerOptions {
  readonly store: EventStore.Service
  readonly auditKey: string | undefined
  readonly runId: string
  readonly tenantId: string
  /** The log loaded so far: the head appends follow. */
  readonly log: ReadonlyArray<Event>
  /** "replay": every append fails. */
  readonly mode: "live" | "replay"
  /** The owner epoch every batch carries. */
  readonly ownerEpoch: number
  /** The first batch claims the run for `ownerEpoch`. */
  readonly claim: boolean
  /** Told when the store refuses a batch because another execution wrote first or claimed the run. */
  readonly onRefused: (reason: string) => void
}

export const make = (options: LedgerOptions) => {
  const { runId, tenantId, mode } = options
  const last = options.log[options.log.length - 1]
  let headSeq = last === undefined ? 0 : last.seq
  let headHash = last === undefined ? GENESIS_HASH : last.hash
  let claimPending = options.claim

  /** The batch `append` writes: the events after the current head, hash-chained, with the execution's epoch. */
  const prepare = (stepKey: string, payloads: ReadonlyArray<EventPayload>, timestamp: number) => {
    const events: Array<Event> = []
    let prevHash = headHash
    for (let i = 0; i < payloads.length; i++) {
      const payload = payloads[i]!
      const event: Types.Mutable<Event> = {
        eventId: crypto.randomUUID(),
        runId,
        tenantId,
        seq: headSeq + i + 1,
        timestamp,
        type: payload._tag,
        stepKey,
        payload,
        prevHash,
        hash: ""
      }
      // The hash covers every field but `hash` itself.
      event.hash = newEventHash(event, options.auditKey)
      events.push(event)
      prevHash = event.hash
    }
    return { runId, tenantId, expectedSeq: headSeq, events, ownerEpoch: options.ownerEpoch, claim: claimPending }
  }

  /**
   * Appends a batch after the current head; fails with the store's error. With `alongside`, the batch and those
   * (other runs' batches) are written in one transaction (`EventStore.appendAll`): the handover of continue-as-new.
   */
  const append = (
    stepKey: string,
    payloads: ReadonlyArray<EventPayload>,
    alongside: ReadonlyArray<EventStore.AppendRequest> = []
  ): Effect.Effect<void, AppendError> => {
    if (mode === "replay") {
      return Effect.fail(new Errors.InvalidRunState({ runId, status: "being replayed", expected: "live (a replay writes nothing)" }))
    }
    // No generator: this runs twice per tool step.
    return Effect.flatMap(Clock.currentTimeMillis, (timestamp) => {
      const request = prepare(stepKey, payloads, timestamp)
      const write = alongside.length === 0 ? options.store.append(request) : options.store.appendAll([request, ...alongside])
      return Effect.matchEffect(write, {
        onFailure: (error) => {
          // Another execution wrote first or claimed the run: handlers still running here must learn it.
          if (error._tag !== "StoreError") options.onRefused(error.message)
          return Effect.fail(error)
        },
        onSuccess: () => {
          headSeq += request.events.length
          headHash = request.events[request.events.length - 1]?.hash ?? headHash
          claimPending = false
          return Effect.void
        }
      })
    })
  }

  return { append, prepare, head: () => ({ seq: headSeq, hash: headHash }) }
}

export type Ledger = ReturnType<typeof make>

/**
 * A run's log, verified as it is read: each event's hash over its stored bytes, the links, and the run record's
 * head. A log cut before that head is `InvalidRunState` (truncated); any other break is `LogTampered`.
 */
export const readVerified = (store: EventStore.Service, auditKey: string | undefined, info: RunInfo) =>
  Effect.gen(function*() {
    const events = yield* store.readEvents(info.tenantId, info.runId)
    // The log ends before the head the run's record vouches for: events were removed (by hand, or a partial
    // restore). Going on would run the removed steps again, side effects included, and hide the cut.
    const logEnd = events.length === 0 ? 0 : events[events.length - 1]!.seq
    if (info.headSeq > logEnd) {
      return yield* new Errors.InvalidRunState({
        runId: info.runId,
        status: `truncated (its log ends at seq ${logEnd}, its run record at seq ${info.headSeq})`,
        expected: `a whole log (restore the missing events; \`artana verify ${info.runId}\` shows where the log breaks)`
      })
    }
    const report = verifyEvents(info.runId, events, {
      auditKey,
      heads: [{ source: "store's run record", seq: info.headSeq, hash: info.headHash }],
      record: info
    })
    if (!report.ok) {
      return yield* new Errors.LogTampered({ runId: info.runId, seq: report.firstBrokenSeq ?? 0, reason: report.reason ?? "broken" })
    }
    return events
  })

/** The last event of a log with payload `tag`, with its payload typed. */
export const lastOf = <T extends EventPayload["_tag"]>(events: ReadonlyArray<Event>, tag: T) => {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!
    if (e.payload._tag === tag) return { event: e, payload: e.payload as Extract<EventPayload, { _tag: T }> }
  }
  return undefined
}
