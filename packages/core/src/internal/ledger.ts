/**
 * The ledger: a run's hash-chained log as an execution writes and reads it. `make` appends batches after the
 * execution's head, each event's hash chained to the one before and the batch fenced by the execution's owner
 * epoch, and adopts the signals senders appended after its head (`headChain.ts`). Reading a verified log is in
 * `verifiedRead.ts` (forward, a page at a time) and `headRead.ts` (back from the head); re-exported here.
 */
import * as Effect from "effect/Effect"
import * as Errors from "../Errors.js"
import { type Event, type EventPayload, RUN_STEP_KEY, type RunInfo } from "../Event.js"
import type * as EventStore from "../EventStore.js"
import { GENESIS_HASH, writerMaterial } from "./hash.js"
import { catchUp as catchUpSignals, chainBatch, type Head } from "./headChain.js"

/**
 * A run is its record's tenant's: a `RunStarted` naming another (a log stores refuse now, written before) would have
 * an execution act for that tenant, with its capabilities, in its runs. The broken log's error, or undefined.
 */
export const otherTenant = (info: RunInfo, started: Event): Errors.LogTampered | undefined =>
  started.payload._tag === "RunStarted" && started.payload.tenant.tenantId !== info.tenantId
    ? new Errors.LogTampered({ runId: info.runId, seq: started.seq, reason: `the run of tenant ${info.tenantId} starts for tenant ${started.payload.tenant.tenantId}` })
    : undefined

/** What an append fails with: the store refused the batch, or the execution writes nothing (a replay). */
export type AppendError =
  | Errors.InvalidRunState
  | Errors.SequenceConflict
  | Errors.OwnershipLost
  | Errors.StoreError
  | Errors.LogTampered

/**
 * Other runs' batches written in one transaction with a ledger's batch (`EventStore.appendAll`): the handover of
 * continue-as-new. Built for each attempt, with its timestamp: an attempt made again after adopting signals builds
 * them again (the successor's batch carries the signals its predecessor did not take).
 */
export type Alongside = (timestamp: number) => ReadonlyArray<EventStore.AppendRequest>

const NONE: Alongside = () => []

export interface LedgerOptions {
  readonly store: EventStore.Service
  readonly auditKey: string | undefined
  readonly runId: string
  readonly tenantId: string
  /** The run's head (its record's, verified before anything is appended): appends follow it. Absent: a new run. */
  readonly head?: { readonly seq: number; readonly hash: string } | undefined
  /** "replay": every append fails. */
  readonly mode: "live" | "replay"
  /** The owner epoch every batch carries. */
  readonly ownerEpoch: number
  /** The first batch claims the run for `ownerEpoch`. */
  readonly claim: boolean
  /** Why the execution takes the run over: a `RunResumed` saying so is appended before its first batch. */
  readonly resumed?: string | undefined
  /**
   * `OwnershipLost` when the execution's caller no longer holds the run at `now` (its lease ran out, or its signal
   * fired): checked before the batch that claims the run, so a caller that lost its lease never fences the execution
   * that holds the run now.
   */
  readonly lostAt?: ((now: number) => Errors.OwnershipLost | undefined) | undefined
  /** Told when the store refuses a batch because another execution wrote first or claimed the run. */
  readonly onRefused: (reason: string) => void
  /** Told of the signals (`SignalSent`) senders appended after this execution's head, once verified and adopted. */
  readonly onSignals?: ((events: ReadonlyArray<Event>) => void) | undefined
  /** Whether a signal senders appended may be adopted (default: every one); one that may not ends the catch-up as foreign. */
  readonly adopts?: ((event: Event) => boolean) | undefined
}

/** Marks a batch's events as sent and not bookkept yet (`on`), or no longer. */
const inFlight = (sent: Set<string>, events: ReadonlyArray<Event>, on: boolean) => {
  for (let i = 0; i < events.length; i++) {
    if (on) sent.add(events[i]!.eventId)
    else sent.delete(events[i]!.eventId)
  }
}

/** A batch written: the head moves past it, unless a concurrent branch's catch-up adopted it already. */
const written = (head: Head, sent: Set<string>, request: EventStore.AppendRequest) => {
  const events = request.events
  inFlight(sent, events, false)
  if (head.seq !== request.expectedSeq) return
  head.seq += events.length
  head.hash = events[events.length - 1]?.hash ?? head.hash
}

/**
 * After a refused batch's catch-up: refused for good when another writer appended, or when nothing was adopted and
 * the head is still where the batch expected it. Nothing new but a moved head (a concurrent branch's batch
 * acknowledged during the catch-up) is written again.
 */
const refusedFor = (adopted: number | "foreign", head: Head, request: EventStore.AppendRequest): boolean =>
  adopted === "foreign" || (adopted === 0 && head.seq === request.expectedSeq)

export const make = (options: LedgerOptions) => {
  const { runId, tenantId, mode } = options
  // The execution's head: appends follow it; a catch-up moves it past the signals it adopts.
  const head: Head = { seq: options.head?.seq ?? 0, hash: options.head?.hash ?? GENESIS_HASH }
  let claimPending = options.claim
  let resumed = options.resumed
  // The hash material's run, tenant and type parts, built once for every hash this ledger computes.
  const material = writerMaterial()
  // Events sent, not bookkept yet: concurrent branches' batches after one head (the refused one adopts the other's).
  const sent = new Set<string>()

  /** Appends the `RunResumed` of a run taken over, if no batch did yet: the execution's claim. */
  const claim = (): Effect.Effect<void, AppendError> =>
    Effect.suspend(() => {
      const reason = resumed
      if (reason === undefined || mode === "replay") return Effect.void
      resumed = undefined
      return appendBatch(RUN_STEP_KEY, [{ _tag: "RunResumed", reason }], NONE, (error) =>
        Effect.suspend(() => {
          resumed = reason
          return Effect.fail(error)
        }))
    })

  /** Appends a batch after the current head (after the `RunResumed` claim, if not written yet), with `alongside`. */
  const append = (
    stepKey: string,
    payloads: ReadonlyArray<EventPayload>,
    alongside: Alongside = NONE
  ): Effect.Effect<void, AppendError> =>
    resumed === undefined || mode === "replay"
      ? appendBatch(stepKey, payloads, alongside, Effect.fail)
      : Effect.zipRight(claim(), appendBatch(stepKey, payloads, alongside, Effect.fail))

  /** `append`, its failure handled by `orElse` (the halt): on the hot path, in the batch's own failure handler. */
  const appendOr = <E>(
    stepKey: string,
    payloads: ReadonlyArray<EventPayload>,
    orElse: (error: AppendError) => Effect.Effect<never, E>
  ): Effect.Effect<void, E> =>
    resumed === undefined || mode === "replay"
      ? appendBatch(stepKey, payloads, NONE, orElse)
      : Effect.catchAll(Effect.zipRight(claim(), appendBatch(stepKey, payloads, NONE, Effect.fail)), orElse)

  /** The batch `append` writes: the events after the current head, hash-chained, with the execution's epoch. */
  const prepare = (stepKey: string, payloads: ReadonlyArray<EventPayload>, timestamp: number): EventStore.AppendRequest => ({
    runId,
    tenantId,
    expectedSeq: head.seq,
    events: chainBatch(options, material, head, stepKey, payloads, timestamp),
    ownerEpoch: options.ownerEpoch,
    claim: claimPending
  })

  /**
   * Appends a batch after the current head; a failure (the store's error) goes to `orElse`. With `alongside`, the batch
   * and those (other runs' batches) are written in one transaction (`EventStore.appendAll`): the handover of
   * continue-as-new.
   */
  const appendBatch = <E>(
    stepKey: string,
    payloads: ReadonlyArray<EventPayload>,
    alongside: Alongside,
    orElse: (error: AppendError) => Effect.Effect<never, E>
  ): Effect.Effect<void, E> => {
    if (mode === "replay") {
      return orElse(new Errors.InvalidRunState({ runId, status: "being replayed", expected: "live (a replay writes nothing)" }))
    }
    // No generator: this runs twice per tool step. The clock is read in place (`clockWith`), not as an effect of its own.
    return Effect.clockWith((clock) => {
      const timestamp = clock.unsafeCurrentTimeMillis()
      const lost = claimPending ? options.lostAt?.(timestamp) : undefined // a claim fences the run's owner: see `lostAt`
      if (lost !== undefined) return orElse(lost)
      const request = prepare(stepKey, payloads, timestamp)
      inFlight(sent, request.events, true)
      const write = alongside === NONE ? options.store.append(request) : options.store.appendAll([request, ...alongside(timestamp)])
      // `matchEffect`: one node for the outcome, twice a tool step (the success is bookkept in place).
      return Effect.matchEffect(write, {
        onSuccess: () => {
          written(head, sent, request)
          claimPending = false
          return Effect.void
        },
        onFailure: (error): Effect.Effect<void, E> => {
          // A store error's batch may be written: it stays recognized as this execution's own.
          if (error._tag !== "StoreError") inFlight(sent, request.events, false)
          // Signals senders appended, or a concurrent branch's own batch (see `sent`): adopted, and the batch written
          // again after them (`catchUp`); after a head that branch's success moved, at once. Not at seq 0 (the run
          // exists: `startRun` goes on with it); a handover's conflict of its successor's adopts nothing.
          if (error._tag === "SequenceConflict" && request.expectedSeq > 0) {
            if (head.seq !== request.expectedSeq) return appendBatch(stepKey, payloads, alongside, orElse)
            return Effect.flatMap(
              Effect.catchAll(catchUp(), orElse),
              (adopted) => refusedFor(adopted, head, request) ? refused(error, orElse) : appendBatch(stepKey, payloads, alongside, orElse)
            )
          }
          return refused(error, orElse)
        }
      })
    })
  }

  /** Another execution wrote first or claimed the run: handlers still running here must learn it. */
  const refused = <E>(error: AppendError, orElse: (error: AppendError) => Effect.Effect<never, E>): Effect.Effect<never, E> => {
    if (error._tag !== "StoreError") options.onRefused(error.message)
    return orElse(error)
  }

  /** Adopts the signals and own batches after the head (`headChain.ts`): how many, or "foreign" (anything else). */
  const catchUp = (): Effect.Effect<number | "foreign", AppendError> => mode === "replay" ? Effect.succeed(0) : catchUpSignals(options, head, sent)

  return {
    append,
    appendOr,
    catchUp,
    claim,
    prepare,
    head: () => ({ seq: head.seq, hash: head.hash })
  }
}

export type Ledger = ReturnType<typeof make>

/**
 * A ledger for a writer from outside the run (a signal's sender, an approver): it appends right after the run's head
 * `info` as the run's current owner epoch, claiming nothing (an outsider is no owner and fences no one), so a write of
 * the run's own execution, or another outsider's, first makes it conflict.
 */
export const outsider = (
  store: EventStore.Service,
  auditKey: string | undefined,
  info: RunInfo,
  adopts?: LedgerOptions["adopts"]
): Ledger =>
  make({
    store,
    auditKey,
    runId: info.runId,
    tenantId: info.tenantId,
    head: { seq: info.headSeq, hash: info.headHash },
    mode: "live",
    ownerEpoch: info.ownerEpoch,
    claim: false,
    onRefused: () => undefined,
    adopts
  })

export type { Found } from "./headRead.js"
export { headEvent, lastEventOf, lastOf, lastVerifiedEvent, ownHeadEvent } from "./headRead.js"
export type { ReadError } from "./verifiedRead.js"
export { verifiedEvents, verifiedPages } from "./verifiedRead.js"
