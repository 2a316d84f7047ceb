/**
 * Chaining onto a ledger's head: the events of a batch it appends, each hash-chained to the one before, and its
 * catch-up, which adopts the signals (`SignalSent` under the run's step key, written by `Kernel.signal`) senders
 * appended after its head, each verified (seq, link, hash) first.
 */
import * as Effect from "effect/Effect"
import * as Errors from "../Errors.js"
import { type Event, type EventPayload, RUN_STEP_KEY } from "../Event.js"
import type * as EventStore from "../EventStore.js"
import { hashMatches, newStoredEvent, type StoredMaterial } from "./hash.js"

/** Signals adopted in one catch-up read at most: a sender's flood cannot hold a page larger than this in memory. */
export const CATCH_UP_PAGE = 1000

/** A ledger's head: the last event it wrote or adopted. */
export interface Head {
  seq: number
  hash: string
}

/** Where a catch-up reads and what it adopts (a ledger's options). */
export interface CatchUpOptions {
  readonly store: EventStore.Service
  readonly auditKey: string | undefined
  readonly runId: string
  readonly tenantId: string
  readonly onSignals?: ((events: ReadonlyArray<Event>) => void) | undefined
  readonly adopts?: ((event: Event) => boolean) | undefined
}

/** Events of the ledger's own batches whose success it has not bookkept yet (another branch's, written meanwhile). */
export interface OwnEvents {
  readonly has: (eventId: string) => boolean
}

/**
 * Reads what was appended after `head`. Signals are verified (seq, link, hash) and adopted: `head` moves past them
 * and `onSignals` hears of them. So are the ledger's `own` events: a batch a concurrent branch of the execution wrote
 * after the same head, whose success that branch has not bookkept yet. Returns how many were adopted, or "foreign"
 * when another writer appended anything else (another execution: this one must stop). A broken one is `LogTampered`.
 */
export const catchUp = (options: CatchUpOptions, head: Head, own?: OwnEvents): Effect.Effect<number | "foreign", CatchUpError> =>
  Effect.suspend(() => {
    const read = options.store.readEvents(options.tenantId, options.runId, head.seq + 1, CATCH_UP_PAGE)
    return Effect.flatMap(
      Effect.catchTag(read, "RunNotFound", () => Effect.succeed([])),
      (read): Effect.Effect<number | "foreign", CatchUpError> => {
        // The head may have moved while the page was read (a concurrent branch's batch acknowledged, another catch-up):
        // what it moved past is this execution's, bookkept already (its batches are no longer in `own`).
        const page = read.length > 0 && read[0]!.seq <= head.seq ? read.filter((event) => event.seq > head.seq) : read
        if (page.length === 0 && read.length === CATCH_UP_PAGE) return catchUp(options, head, own)
        const adopted: Array<Event> = []
        let taken = 0
        let seq = head.seq
        let hash = head.hash
        for (const event of page) {
          const mine = own?.has(event.eventId) === true
          if (!mine && (event.payload._tag !== "SignalSent" || event.stepKey !== RUN_STEP_KEY || options.adopts?.(event) === false)) break
          if (event.seq !== seq + 1 || event.prevHash !== hash || event.type !== event.payload._tag || !hashMatches(event, options.auditKey)) {
            return Effect.fail(new Errors.LogTampered({ runId: options.runId, seq: event.seq, reason: "an event appended after this execution's head does not chain to it" }))
          }
          if (!mine) adopted.push(event)
          taken++
          seq = event.seq
          hash = event.hash
        }
        if (taken < page.length) return Effect.succeed("foreign")
        if (taken === 0) return Effect.succeed(0)
        head.seq = seq
        head.hash = hash
        if (adopted.length > 0) options.onSignals?.(adopted)
        // A full page: more may follow.
        return read.length === CATCH_UP_PAGE
          ? Effect.map(catchUp(options, head, own), (more) => (more === "foreign" ? more : taken + more))
          : Effect.succeed(taken)
      }
    )
  })

/** What a catch-up fails with: the store's error, or a signal that does not chain. */
export type CatchUpError = Errors.StoreError | Errors.LogTampered

/** Events for `payloads` after `head`, each hash-chained to the one before (the hash covers every field but itself). */
export const chainBatch = (
  options: { readonly runId: string; readonly tenantId: string; readonly auditKey: string | undefined },
  material: StoredMaterial,
  head: { readonly seq: number; readonly hash: string },
  stepKey: string,
  payloads: ReadonlyArray<EventPayload>,
  timestamp: number
): Array<Event> => {
  const events: Array<Event> = []
  let prevHash = head.hash
  for (let i = 0; i < payloads.length; i++) {
    const payload = payloads[i]!
    // The event keeps the payload text it hashed (what is stored).
    const event = newStoredEvent({
      eventId: crypto.randomUUID(),
      runId: options.runId,
      tenantId: options.tenantId,
      seq: head.seq + i + 1,
      timestamp,
      type: payload._tag,
      stepKey,
      payload,
      prevHash
    }, options.auditKey, material)
    events.push(event)
    prevHash = event.hash
  }
  return events
}
