/**
 * Copying a fork's prefix (`Kernel.fork`): the source's events re-chained under the fork's id, written in one
 * transaction (`EventStore.appendPaged`) a page at a time, read from the source's verified log as they go.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as Types from "effect/Types"
import * as Errors from "../Errors.js"
import type { Event, EventPayload, ForkedFrom, RunInfo } from "../Event.js"
import type * as EventStore from "../EventStore.js"
import { failure, PAGE_SIZE } from "./forkCut.js"
import { GENESIS_HASH, newEventHash } from "./hash.js"
import { verifiedPages } from "./ledger.js"

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
export const copy = (
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
