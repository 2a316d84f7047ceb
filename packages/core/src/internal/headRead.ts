/**
 * A run's last events, read back from its record's head a page at a time and verified on the way back: what a
 * completed, failed or paused run stands at, in O(1) of its length when it is the head.
 */
import * as Effect from "effect/Effect"
import * as Errors from "../Errors.js"
import type { Event, EventPayload, RunInfo } from "../Event.js"
import * as EventStore from "../EventStore.js"
import { chainChecker, GENESIS_HASH } from "./hash.js"
import { type ReadError, truncated } from "./verifiedRead.js"

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
