/**
 * The part of a run's log the replay cursor holds: the steps read and not yet consumed, by key and in the order
 * they first appear, pulled a page at a time. A consumed step is dropped at once, so memory is that of a page and of
 * the steps in flight, however long the run.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Errors from "../Errors.js"
import { type Event, RUN_STEP_KEY } from "../Event.js"
import { isMarker } from "./replayStep.js"
import { tagOf } from "./lazyPayload.js"

/** What reading the rest of the log fails with (its last pull also claims a resumed run: the store's refusals). */
export type LoadError =
  | Errors.StoreError
  | Errors.InvalidRunState
  | Errors.LogTampered
  | Errors.SequenceConflict
  | Errors.OwnershipLost

/** The log the cursor pulls: what was read so far, and the next verified page (None once the log ended). */
export interface Log {
  readonly first: ReadonlyArray<Event>
  readonly next: Effect.Effect<Option.Option<ReadonlyArray<Event>>, LoadError>
}

/**
 * A step of the log held by the cursor: its events read so far. It is also the cursor's answer for a recorded step
 * (`_tag`), so a replayed step allocates no answer of its own.
 */
export interface Step {
  readonly _tag: "Recorded"
  readonly key: string
  readonly events: Array<Event>
  consumed: boolean
}

/** Where the held log stands (plain fields, read on every lookup of a replay). */
export interface State {
  /** Whether the whole log was read. */
  done: boolean
  /** Whether the log holds the run's end (`RunCompleted`, `RunFailed`, `RunContinued`): its code ran past every point of it. */
  ended: boolean
  /** Whether that end is a handover (`RunContinued`). */
  continued: boolean
  /** How many pages were read after the first. */
  pages: number
  /** The step key of the last event read: its batch may go on in the next page. */
  lastKey: string | undefined
  /** How many events the held steps have. */
  heldEvents: number
  /** The highest seq of the events of the steps consumed (0: none). */
  consumedSeq: number
}

export const make = (log: Log | undefined) => {
  // The steps read and not consumed, by key; `order` in the order they first appear (consumed ones skipped). A new
  // map each page (see `fresh`).
  let held = new Map<string, Step>()
  // Slots before `cursor` are emptied as the scan passes them: a consumed step's events are garbage at once, not
  // kept until the array is compacted (held that long, they outlive the young generation and swell the heap).
  let order: Array<Step | undefined> = []
  let cursor = 0
  const state: State = { done: log === undefined, ended: false, continued: false, pages: 0, lastKey: undefined, heldEvents: 0, consumedSeq: 0 }
  const lock = Effect.unsafeMakeSemaphore(1)
  // What the cursor sees of the state: plain fields (a getter per field cost a replay ~10% of the cursor's time).
  const view: Readonly<State> = state

  const add = (page: ReadonlyArray<Event>) => {
    held = fresh(held)
    for (let i = 0; i < page.length; i++) {
      const event = page[i]!
      state.lastKey = event.stepKey
      if (event.stepKey === RUN_STEP_KEY) {
        const tag = tagOf(event)
        if (tag === "RunCompleted" || tag === "RunFailed" || tag === "RunContinued") state.ended = true
        if (tag === "RunContinued") state.continued = true
        continue
      }
      const step = held.get(event.stepKey)
      if (step === undefined) {
        const created: Step = { _tag: "Recorded", key: event.stepKey, events: [event], consumed: false }
        held.set(event.stepKey, created)
        order.push(created)
      } else step.events.push(event)
      state.heldEvents++
    }
  }
  if (log !== undefined) add(log.first)

  return {
    /** Where the held log stands (read only: the held log moves it). */
    state: view,
    /** The held step under `key`, if any. */
    get: (key: string): Step | undefined => held.get(key),
    /** Drops a step the code consumed. */
    consume: (step: Step): void => {
      step.consumed = true
      held.delete(step.key)
      state.heldEvents -= step.events.length
      const last = step.events[step.events.length - 1]!.seq
      if (last > state.consumedSeq) state.consumedSeq = last
    },
    /** The first held step not consumed (a patch marker not asked for yet is passed over: a later `patched` finds it by key). */
    nextUnconsumed: (): Step | undefined => {
      while (cursor < order.length && (order[cursor]!.consumed || isMarker(order[cursor]!.key, order[cursor]!.events))) {
        order[cursor++] = undefined
      }
      if (cursor > 1024 && cursor * 2 > order.length) {
        order = order.slice(cursor)
        cursor = 0
      }
      return order[cursor]
    },
    /** The first held step not consumed (nor a patch marker) that begins after `seq`. */
    unconsumedAfter: (seq: number): Step | undefined => {
      for (let i = cursor; i < order.length; i++) {
        const step = order[i]
        if (step !== undefined && !step.consumed && !isMarker(step.key, step.events) && step.events[0]!.seq > seq) return step
      }
      return undefined
    },
    /** Reads the next page, unless another fiber read one since `seen` (or the log ended). */
    load: (seen: number): Effect.Effect<void, LoadError> =>
      lock.withPermits(1)(Effect.suspend(() => {
        if (state.done || state.pages !== seen || log === undefined) return Effect.void
        return Effect.map(log.next, (page) => {
          state.pages++
          if (Option.isNone(page)) state.done = true
          else add(page.value)
        })
      }))
  }
}

export type HeldLog = ReturnType<typeof make>

/** Up to how many held steps `fresh` moves to a new map (more are left where they are: a run read far ahead). */
const FRESH_MAX = 1024

/**
 * The held steps in a new map, unless there are more than `FRESH_MAX`. One map kept for a whole replay made a resume's
 * peak memory about double, one resume in two (issue 15, bench/scale/README.md). V8 grows and shrinks a map by moving
 * it to a new table, allocated in the old generation when the table it replaces is there (V8's
 * `OrderedHashTable::Rehash`), and the table left behind keeps its entries. So once the map's table had been promoted
 * (it lived through two young collections, likely early in a process, while the young generation is still small),
 * every later table was old too: the ones left behind were garbage that still pointed at their steps, and the young
 * collector kept those steps and their events alive and promoted them (~2.5 MB a young collection on a 100,000-step
 * resume, against ~0.1-0.3 MB otherwise), until a full GC. A new map each page starts young.
 */
const fresh = (held: Map<string, Step>): Map<string, Step> => (held.size > FRESH_MAX ? held : new Map(held))
