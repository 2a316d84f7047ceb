/**
 * The ledger: a run's hash-chained log as an execution writes and reads it. `make` appends batches after the
 * execution's head, each event's hash chained to the one before and the batch fenced by the execution's owner
 * epoch; `verifiedEvents` reads a log a page at a time and checks its chain (and at its end the run record's head)
 * before anything uses it.
 */
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Errors from "../Errors.js"
import { type Event, type EventPayload, RUN_STEP_KEY, type RunInfo } from "../Event.js"
import * as EventStore from "../EventStore.js"
import * as Verify from "../Verify.js"
import type { VerifyReport } from "../Verify.js"
import { chainChecker, GENESIS_HASH, hashMatches, newStoredEvent, writerMaterial } from "./hash.js"

/** Signals adopted in one catch-up read at most: a sender's flood cannot hold a page larger than this in memory. */
const CATCH_UP_PAGE = 1000

/** What an append fails with: the store refused the batch, or the execution writes nothing (a replay). */
export type AppendError =
  | Errors.InvalidRunState
  | Errors.SequenceConflict
  | Errors.OwnershipLost
  | Errors.StoreError
  | Errors.LogTampered

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
  /** Told when the store refuses a batch because another execution wrote first or claimed the run. */
  readonly onRefused: (reason: string) => void
  /** Told of the signals (`SignalSent`) senders appended after this execution's head, once verified and adopted. */
  readonly onSignals?: ((events: ReadonlyArray<Event>) => void) | undefined
  /** Whether a signal senders appended may be adopted (default: every one); one that may not ends the catch-up as foreign. */
  readonly adopts?: ((event: Event) => boolean) | undefined
}

export const make = (options: LedgerOptions) => {
  const { runId, tenantId, mode } = options
  let headSeq = options.head?.seq ?? 0
  let headHash = options.head?.hash ?? GENESIS_HASH
  let claimPending = options.claim
  let resumed = options.resumed
  // The hash material's run, tenant and type parts, built once for every hash this ledger computes.
  const material = writerMaterial()

  /** Appends the `RunResumed` of a run taken over, if no batch did yet: the execution's claim. */
  const claim = (): Effect.Effect<void, AppendError> =>
    Effect.suspend(() => {
      const reason = resumed
      if (reason === undefined || mode === "replay") return Effect.void
      resumed = undefined
      return Effect.tapError(appendBatch(RUN_STEP_KEY, [{ _tag: "RunResumed", reason }]), () => Effect.sync(() => void (resumed = reason)))
    })

  /** Appends a batch after the current head (after the `RunResumed` claim, if not written yet), with `alongside`. */
  const append = (
    stepKey: string,
    payloads: ReadonlyArray<EventPayload>,
    alongside: ReadonlyArray<EventStore.AppendRequest> = []
  ): Effect.Effect<void, AppendError> =>
    resumed === undefined || mode === "replay"
      ? appendBatch(stepKey, payloads, alongside)
      : Effect.zipRight(claim(), appendBatch(stepKey, payloads, alongside))

  /** The batch `append` writes: the events after the current head, hash-chained, with the execution's epoch. */
  const prepare = (stepKey: string, payloads: ReadonlyArray<EventPayload>, timestamp: number) => {
    const events: Array<Event> = []
    let prevHash = headHash
    for (let i = 0; i < payloads.length; i++) {
      const payload = payloads[i]!
      // The hash covers every field but `hash` itself; the event keeps the payload text it hashed (what is stored).
      const event = newStoredEvent({
        eventId: crypto.randomUUID(),
        runId,
        tenantId,
        seq: headSeq + i + 1,
        timestamp,
        type: payload._tag,
        stepKey,
        payload,
        prevHash
      }, options.auditKey, material)
      events.push(event)
      prevHash = event.hash
    }
    return { runId, tenantId, expectedSeq: headSeq, events, ownerEpoch: options.ownerEpoch, claim: claimPending }
  }

  /**
   * Appends a batch after the current head; fails with the store's error. With `alongside`, the batch and those
   * (other runs' batches) are written in one transaction (`EventStore.appendAll`): the handover of continue-as-new.
   */
  const appendBatch = (
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
      // `map` then `catchAll` rather than `matchEffect`: half the runtime's work, twice a tool step.
      const written = Effect.map(write, () => {
        headSeq += request.events.length
        headHash = request.events[request.events.length - 1]?.hash ?? headHash
        claimPending = false
      })
      return Effect.catchAll(written, (error): Effect.Effect<void, AppendError> => {
        // Senders append signals to the run's chain under the same sequence check: a conflict they caused is
        // settled by adopting their events and writing the batch again after them (see `catchUp`).
        if (error._tag === "SequenceConflict" && alongside.length === 0) {
          return Effect.flatMap(catchUp(), (adopted) =>
            adopted === "foreign" ? refused(error) : adopted === 0 ? refused(error) : appendBatch(stepKey, payloads))
        }
        return refused(error)
      })
    })
  }

  /** Another execution wrote first or claimed the run: handlers still running here must learn it. */
  const refused = (error: AppendError): Effect.Effect<never, AppendError> => {
    if (error._tag !== "StoreError") options.onRefused(error.message)
    return Effect.fail(error)
  }

  /**
   * Reads what was appended after this execution's head. Signals (`SignalSent` under the run's step key, written by
   * `Kernel.signal`) are verified (seq, link, hash) and adopted: the head moves past them and `onSignals` hears of
   * them. Returns how many were adopted, or "foreign" when another writer appended anything else (another execution:
   * this one must stop). A broken signal is `LogTampered`.
   */
  const catchUp = (): Effect.Effect<number | "foreign", AppendError> =>
    Effect.suspend(() => {
      if (mode === "replay") return Effect.succeed(0)
      return Effect.flatMap(
        Effect.catchTag(options.store.readEvents(tenantId, runId, headSeq + 1, CATCH_UP_PAGE), "RunNotFound", () => Effect.succeed([])),
        (page): Effect.Effect<number | "foreign", AppendError> => {
          const adopted: Array<Event> = []
          let seq = headSeq
          let hash = headHash
          for (const event of page) {
            if (event.payload._tag !== "SignalSent" || event.stepKey !== RUN_STEP_KEY || options.adopts?.(event) === false) break
            if (event.seq !== seq + 1 || event.prevHash !== hash || event.type !== event.payload._tag || !hashMatches(event, options.auditKey)) {
              return Effect.fail(new Errors.LogTampered({ runId, seq: event.seq, reason: "a signal appended after this execution's head does not chain to it" }))
            }
            adopted.push(event)
            seq = event.seq
            hash = event.hash
          }
          if (adopted.length < page.length) return Effect.succeed("foreign")
          if (adopted.length === 0) return Effect.succeed(0)
          headSeq = seq
          headHash = hash
          options.onSignals?.(adopted)
          // A full page: more may follow.
          return page.length === CATCH_UP_PAGE
            ? Effect.map(catchUp(), (more) => (more === "foreign" ? more : adopted.length + more))
            : Effect.succeed(adopted.length)
        }
      )
    })

  return {
    append,
    catchUp,
    claim,
    prepare,
    head: () => ({ seq: headSeq, hash: headHash })
  }
}

export type Ledger = ReturnType<typeof make>

/** What reading a run's verified log fails with: the store's errors, a broken chain, a log cut before its head. */
export type ReadError = Errors.RunNotFound | Errors.StoreError | Errors.LogTampered | Errors.InvalidRunState

/** The `InvalidRunState` of a log that ends before the head its run record vouches for. */
const truncated = (info: RunInfo, logEnd: number) =>
  new Errors.InvalidRunState({
    runId: info.runId,
    status: `truncated (its log ends at seq ${logEnd}, its run record at seq ${info.headSeq})`,
    expected: `a whole log (restore the missing events; \`artana verify ${info.runId}\` shows where the log breaks)`
  })

/**
 * A run's log up to its record's head, read a page at a time and verified as the pages go by: each page's events
 * (their hashes over their stored bytes, the links, `seq` without gaps) before any of them is returned, and once the
 * last page is read, the run record's head, status and cost. `next` gives the next page (never empty), then None once
 * the log ended and those checks passed. Memory holds a page, however long the run. A log cut before that head fails
 * `InvalidRunState` (truncated) at its end; any other break fails `LogTampered`, naming the first broken seq. A plain
 * loop over `readEvents`: what replay pulls a page at a time (`verifiedEvents` streams it).
 */
export const verifiedPages = (
  store: EventStore.Service,
  auditKey: string | undefined,
  info: RunInfo,
  options: { readonly pageSize?: number | undefined } = {}
): Effect.Effect<Option.Option<ReadonlyArray<Event>>, ReadError> => {
  const pageSize = Math.max(1, Math.floor(options.pageSize ?? EventStore.DEFAULT_PAGE_SIZE))
  const verifier = Verify.make(info.runId, {
    auditKey,
    heads: [{ source: "store's run record", seq: info.headSeq, hash: info.headHash }],
    record: info
  })
  let logEnd = 0
  // "read": more pages may follow; "end": the last page was given, the checks of the log's end are next; "done".
  let state: "read" | "end" | "done" = "read"
  const end = Effect.suspend((): Effect.Effect<Option.Option<ReadonlyArray<Event>>, ReadError> => {
    state = "done"
    // The log ends before the head the run's record vouches for: events were removed (by hand, or a partial
    // restore). Going on would run the removed steps again, side effects included, and hide the cut.
    if (info.headSeq > logEnd) return Effect.fail(truncated(info, logEnd))
    const report = verifier.finish()
    return report.ok ? Effect.succeed(Option.none()) : Effect.fail(tampered(info, report))
  })
  const page = (read: ReadonlyArray<Event>): Effect.Effect<Option.Option<ReadonlyArray<Event>>, ReadError> => {
    // Events appended after the record was read are not this read's: the record's head ends it. A short page is the
    // end of the log (as it was when read).
    let events = read
    const beyond = read.findIndex((event) => event.seq > info.headSeq)
    if (beyond >= 0) events = read.slice(0, beyond)
    if (events.length === 0) return end
    const broken = verifier.push(events)
    if (broken !== undefined) return Effect.fail(tampered(info, broken))
    logEnd = events[events.length - 1]!.seq
    if (beyond >= 0 || read.length < pageSize || logEnd >= info.headSeq) state = "end"
    return Effect.succeed(Option.some(events))
  }
  return Effect.suspend(() => {
    switch (state) {
      case "done":
        return Effect.succeed(Option.none())
      case "end":
        return end
      case "read":
        return Effect.flatMap(store.readEvents(info.tenantId, info.runId, logEnd + 1, pageSize), page)
    }
  })
}

/**
 * `verifiedPages` as a stream: each chunk is one page. A run's log up to its record's head, verified as the pages go
 * by; memory holds a page, however long the run.
 */
export const verifiedEvents = (
  store: EventStore.Service,
  auditKey: string | undefined,
  info: RunInfo,
  options: { readonly pageSize?: number | undefined } = {}
): Stream.Stream<Event, ReadError> =>
  Stream.suspend(() => {
    const next = verifiedPages(store, auditKey, info, options)
    return Stream.repeatEffectChunkOption(Effect.matchEffect(next, {
      onFailure: (error) => Effect.fail(Option.some(error)),
      onSuccess: Option.match({ onNone: () => Effect.fail(Option.none()), onSome: (events) => Effect.succeed(Chunk.unsafeFromArray(events)) })
    }))
  })

const tampered = (info: RunInfo, report: VerifyReport) =>
  new Errors.LogTampered({ runId: info.runId, seq: report.firstBrokenSeq ?? 0, reason: report.reason ?? "broken" })

/**
 * The last event of a run's log that `matches` (or undefined), read back from the run record's head a page at a time
 * (`EventStore.lastEvent`) and verified on the way back, from the head the record vouches for: the event at the head
 * seq has the record's head hash, each event hashes to its hash over its stored bytes (the audit key's), and each is
 * linked to the event after it (its hash is that one's prevHash), `seq` without gaps; read back to the start, the
 * first event's prevHash is the genesis hash. So the event found is the one written, linked to the head. What it costs
 * is the events from the head back to it: one when it is the head (a finished run's end, a pause nothing followed),
 * whatever the run's length. The log before it is not read (`Kernel.verify` checks the whole chain). A log cut before
 * the record's head fails `InvalidRunState` (truncated), any other break `LogTampered`.
 */
export const lastVerifiedEvent = (
  store: EventStore.Service,
  auditKey: string | undefined,
  info: RunInfo,
  matches: (event: Event) => boolean
): Effect.Effect<Event | undefined, ReadError> =>
  Effect.suspend(() => {
    const hashMatches = chainChecker(auditKey)
    // The event expected next on the way back: its seq, and the hash the event after it (or the record) links to.
    let seq = info.headSeq
    let hash = info.headHash
    let broken: ReadError | undefined
    const broke = (error: ReadError) => {
      broken = error
      return true
    }
    const step = (event: Event): boolean => {
      if (event.seq !== seq) {
        return broke(seq === info.headSeq ? truncated(info, event.seq) : new Errors.LogTampered({ runId: info.runId, seq, reason: `expected seq ${seq}, found seq ${event.seq} (an event is missing)` }))
      }
      if (event.hash !== hash) {
        const reason = seq === info.headSeq ? "the store's run record head hash differs" : "hash is not the prevHash of the event after it"
        return broke(new Errors.LogTampered({ runId: info.runId, seq, reason }))
      }
      if (event.runId !== info.runId || event.type !== event.payload._tag || !hashMatches(event, false)) {
        return broke(new Errors.LogTampered({ runId: info.runId, seq, reason: "hash does not match the event's content as stored (altered, or written with another audit key)" }))
      }
      seq--
      hash = event.prevHash
      return matches(event)
    }
    return Effect.flatMap(EventStore.lastEvent(store, info.tenantId, info.runId, step, { throughSeq: info.headSeq }), (found) => {
      if (broken !== undefined) return Effect.fail(broken)
      if (found !== undefined) return Effect.succeed(found)
      // Read back to the start: the log must begin at seq 1, linked to the genesis hash.
      if (seq === info.headSeq && seq > 0) return Effect.fail(truncated(info, 0))
      if (seq !== 0) return Effect.fail(new Errors.LogTampered({ runId: info.runId, seq, reason: `expected seq ${seq}, found none (an event is missing)` }))
      if (hash !== GENESIS_HASH) return Effect.fail(new Errors.LogTampered({ runId: info.runId, seq: 1, reason: "prevHash of the first event is not the genesis hash" }))
      return Effect.succeed(undefined)
    })
  })

/**
 * The run's last event (at its record's head), read alone and verified as `lastVerifiedEvent` verifies it: O(1) in
 * the run's length.
 */
export const headEvent = (store: EventStore.Service, auditKey: string | undefined, info: RunInfo): Effect.Effect<Event, ReadError> =>
  Effect.flatMap(lastVerifiedEvent(store, auditKey, info, () => true), (head) => head === undefined ? Effect.fail(truncated(info, 0)) : Effect.succeed(head))

/**
 * The run's last event of its own: the head, or the last event before the signals a sender appended after it
 * (`SignalSent`, which wait there for the run). What a run paused at stands at (its pause, or a tool call's
 * approval) is read here, so a signal sent meanwhile hides nothing. Verified as `lastVerifiedEvent` verifies.
 */
export const ownHeadEvent = (store: EventStore.Service, auditKey: string | undefined, info: RunInfo): Effect.Effect<Event, ReadError> =>
  Effect.flatMap(
    lastVerifiedEvent(store, auditKey, info, (event) => event.payload._tag !== "SignalSent"),
    (head) => head === undefined ? Effect.fail(truncated(info, 0)) : Effect.succeed(head)
  )

/** The last event with payload `tag`, found as `lastVerifiedEvent` finds it (the head event when it is one: O(1)). */
export const lastEventOf = <T extends EventPayload["_tag"]>(
  store: EventStore.Service,
  auditKey: string | undefined,
  info: RunInfo,
  tag: T
): Effect.Effect<Found<T> | undefined, ReadError> =>
  Effect.map(lastVerifiedEvent(store, auditKey, info, (event) => event.payload._tag === tag), (event) => event === undefined ? undefined : lastOf([event], tag))

/** An event with its payload typed by its tag. */
export interface Found<T extends EventPayload["_tag"]> {
  readonly event: Event
  readonly payload: Extract<EventPayload, { _tag: T }>
}

/** The last event of a log with payload `tag`, with its payload typed. */
export const lastOf = <T extends EventPayload["_tag"]>(events: ReadonlyArray<Event>, tag: T): Found<T> | undefined => {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!
    if (e.payload._tag === tag) return { event: e, payload: e.payload as Extract<EventPayload, { _tag: T }> }
  }
  return undefined
}
