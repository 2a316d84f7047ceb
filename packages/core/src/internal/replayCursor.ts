/**
 * The replay cursor: a run's log, pulled a page at a time as the code asks for steps. It holds only the steps read
 * and not yet consumed (steps met out of the log's order wait there) and drops a step once the code consumed it, so
 * its memory is that of a page and of the steps in flight, however long the run. A lookup says whether the step is
 * recorded (its events), new (the code may run it live), a divergence from the log, or pending (more of the log
 * must be read first: an effect that reads it and answers).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Errors from "../Errors.js"
import { type Event, type EventPayload, RUN_STEP_KEY } from "../Event.js"

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

/** What the log says of a step the code asks for, once enough of it was read. */
export type Resolved =
  | { readonly _tag: "Recorded"; readonly events: ReadonlyArray<Event> }
  | { readonly _tag: "New" }
  | { readonly _tag: "Diverged"; readonly error: Errors.NonDeterminism }

/** A lookup: resolved, or `Pending` (its `next` reads more of the log and resolves it). */
export type Lookup = Resolved | { readonly _tag: "Pending"; readonly next: Effect.Effect<Resolved, LoadError> }

/**
 * How far the cursor reads ahead for a step the code asks for that it has not met yet (steps run concurrently
 * under explicit keys are logged in the order they finished): past this many events held, the step is not in the
 * log's near future and the code diverged. Memory stays bounded even then.
 */
export const READ_AHEAD_EVENTS = 20_000

/**
 * How many of the last steps' keys are remembered to catch a reused key (see the README's "Long runs"): two steps
 * under one key this close together are refused, as before; farther apart, the log holds two steps under one key,
 * which a replay meets in order.
 */
export const RECENT_KEYS = 10_000

const New: Lookup = { _tag: "New" }

/** The step key of the marker `ctx.patched(id)` / `ctx.deprecatePatch(id)` log (a `StepCompleted` named `patched`). */
export const patchKey = (patchId: string): string => `${PATCH_KEY_PREFIX}${patchId}`
export const PATCH_KEY_PREFIX = "patched:"
/** The name of a patch marker's `StepCompleted` (its value is the patch id). */
export const PATCH_STEP_NAME = "patched"

/**
 * What the log says of a patch marker the code asks for: recorded (the run reached this point with the patched code),
 * `Passed` (the log goes on past this point without it: the run passed it before the change), or new (the run is here
 * for the first time).
 */
export type Probed = Resolved | { readonly _tag: "Passed" }
export type Probe = Probed | { readonly _tag: "Pending"; readonly next: Effect.Effect<Probed, LoadError> }

/**
 * The event a step's batch leads with: its first, except for a call waiting for approval, whose batch ends with its
 * `ApprovalRequested` (the run's head while it waits) after the notes of the `beforeTool` middleware.
 */
export const leadOf = (events: ReadonlyArray<Event>): Event => {
  const first = events[0]!
  if (first.payload._tag !== "MiddlewareNote") return first
  return events.find((e) => e.payload._tag !== "MiddlewareNote") ?? first
}

/** Names a step by its first event, for messages. */
export const describe = (events: ReadonlyArray<Event>): string => {
  const first = events.length === 0 ? undefined : leadOf(events).payload
  switch (first?._tag) {
    case "ModelRequested":
      return `a model call (request ${first.requestHash.slice(0, 12)})`
    case "ToolRequested":
      return `a call to tool "${first.tool}" with ${first.arguments}`
    case "ApprovalRequested":
      return `an approval of a call to tool "${first.tool}" with ${first.arguments}`
    case "StepCompleted":
      return `step "${first.name}"`
    case "PauseRequested":
      return `a pause for a human ("${first.reason}")`
    case "SignalAwaited":
    case "SignalReceived":
    case "SignalTimedOut":
      return `a wait for signal "${first.name}"`
    case undefined:
      return "nothing"
    default:
      return `a ${first?._tag} event`
  }
}

const has = (events: ReadonlyArray<Event>, a: EventPayload["_tag"], b?: EventPayload["_tag"], c?: EventPayload["_tag"], d?: EventPayload["_tag"]) => {
  for (let i = events.length - 1; i > 0; i--) {
    const tag = events[i]!.payload._tag
    if (tag === a || tag === b || tag === c || tag === d) return true
  }
  return false
}

/** Whether a step's recorded events settle it: nothing of it is left to run (no call in doubt, no open pause). */
export const isSettled = (events: ReadonlyArray<Event>): boolean => {
  switch (events.length === 0 ? undefined : leadOf(events).payload._tag) {
    case "ToolRequested":
    case "ApprovalRequested":
      return has(events, "ToolCompleted", "ToolFailed")
    case "PauseRequested":
      return has(events, "HumanResponded")
    case "ModelRequested":
      return has(events, "ModelCompleted", "ModelFailed", "PolicyDenied", "BudgetExceeded")
    case "SignalAwaited":
      return has(events, "SignalReceived", "SignalTimedOut")
    default:
      return true
  }
}

/**
 * Whether a held step is a patch marker: never "the next step" a divergence names, since code that no longer calls
 * `patched` (the patch removed) leaves its marker unconsumed, and replays on.
 */
const isMarker = (step: Step): boolean => {
  if (!step.key.startsWith(PATCH_KEY_PREFIX)) return false
  const first = step.events[0]!.payload
  return first._tag === "StepCompleted" && first.name === PATCH_STEP_NAME
}

/** A step of the log held by the cursor: its events read so far. */
interface Step {
  readonly key: string
  readonly events: Array<Event>
  consumed: boolean
}

export const make = (runId: string, log: Log | undefined, mode: "live" | "replay") => {
  // The steps read and not consumed, by key; `order` in the order they first appear (consumed ones skipped).
  const held = new Map<string, Step>()
  // Slots before `cursor` are emptied as the scan passes them: a consumed step's events are garbage at once, not
  // kept until the array is compacted (held that long, they outlive the young generation and swell the heap).
  let order: Array<Step | undefined> = []
  let cursor = 0
  let heldEvents = 0
  // The step key of the last event read: its batch may go on in the next page.
  let lastKey: string | undefined
  let done = log === undefined
  // The log holds the run's end (`RunCompleted`, `RunFailed`, `RunContinued`): its code ran past every point of it.
  let ended = false
  let pages = 0
  // The keys consumed or written: auto keys in `autoKeys` (no string kept), any other key in `explicitKeys`.
  const explicitKeys = ExplicitKeys()
  const autoKeys = AutoKeys()
  let counter = 0
  const lock = Effect.unsafeMakeSemaphore(1)

  let remembered = 0
  const remember = (key: string) => {
    remembered++
    if (!autoKeys.remember(key, remembered)) explicitKeys.remember(key, remembered)
  }
  const used = (key: string): boolean => autoKeys.used(key, remembered) || explicitKeys.used(key, remembered)
  const add = (page: ReadonlyArray<Event>) => {
    for (let i = 0; i < page.length; i++) {
      const event = page[i]!
      lastKey = event.stepKey
      if (event.stepKey === RUN_STEP_KEY) {
        const tag = event.payload._tag
        if (tag === "RunCompleted" || tag === "RunFailed" || tag === "RunContinued") ended = true
        continue
      }
      const step = held.get(event.stepKey)
      if (step === undefined) {
        const created: Step = { key: event.stepKey, events: [event], consumed: false }
        held.set(event.stepKey, created)
        order.push(created)
      } else step.events.push(event)
      heldEvents++
    }
  }
  if (log !== undefined) add(log.first)

  const consume = (step: Step) => {
    step.consumed = true
    held.delete(step.key)
    heldEvents -= step.events.length
    remember(step.key)
  }
  const nextUnconsumed = (): Step | undefined => {
    // A patch marker the code has not asked for yet stays held (a later `patched` finds it by key).
    while (cursor < order.length && (order[cursor]!.consumed || isMarker(order[cursor]!))) order[cursor++] = undefined
    if (cursor > 1024 && cursor * 2 > order.length) {
      order = order.slice(cursor)
      cursor = 0
    }
    return order[cursor]
  }
  /** Reads the next page, unless another fiber read one since `seen` (or the log ended). */
  const load = (seen: number): Effect.Effect<void, LoadError> =>
    lock.withPermits(1)(Effect.suspend(() => {
      if (done || pages !== seen || log === undefined) return Effect.void
      return Effect.map(log.next, (page) => {
        pages++
        if (Option.isNone(page)) done = true
        else add(page.value)
      })
    }))
  const diverged = (key: string, expected: string, actual: string): Resolved => ({
    _tag: "Diverged",
    error: new Errors.NonDeterminism({ runId, stepKey: key, expected, actual })
  })
  const pending = (key: string, actual: () => string): Lookup => {
    const seen = pages
    return { _tag: "Pending", next: Effect.flatMap(load(seen), () => resolve(key, actual)) }
  }
  const resolve = (key: string, actual: () => string): Effect.Effect<Resolved, LoadError> =>
    Effect.suspend(() => {
      const found = lookup(key, actual)
      return found._tag === "Pending" ? found.next : Effect.succeed(found)
    })

  /**
   * Finds a step's recorded events, proves the code may run it live, or says more of the log must be read first.
   * Synchronous on purpose: replay calls it once per step, and only a page boundary needs an effect. `actual` is
   * computed only when a divergence is reported.
   */
  const lookup = (key: string, actual: () => string): Lookup => {
    const recorded = held.get(key)
    if (used(key)) return diverged(key, "a step key used once", `${actual()} reusing it`)
    if (recorded !== undefined) {
      // Its events may go on in the pages not read yet: until the log ends, a step is whole once it is settled and
      // its last batch is followed by another's.
      if (!done && (lastKey === key || !isSettled(recorded.events))) return pending(key, actual)
      const next = nextUnconsumed()
      // A settled step may be met out of the log's order (steps run concurrently, each under its own explicit key,
      // are logged in the order they finished); one that would run anything (a tool call in doubt, an unanswered
      // pause, a model call without a result) may not: the code changed its order, and it would run before the
      // steps that preceded it in the log.
      if (next !== undefined && next !== recorded && !isSettled(recorded.events)) {
        return diverged(key, `${describe(next.events)} at step ${next.key}`, `${actual()} at step ${key}`)
      }
      consume(recorded)
      return { _tag: "Recorded", events: recorded.events }
    }
    const next = nextUnconsumed()
    if (!done) {
      if (next === undefined || heldEvents < READ_AHEAD_EVENTS) return pending(key, actual)
      return diverged(key, `${describe(next.events)} at step ${next.key}`, `${actual()} (not met within ${READ_AHEAD_EVENTS} events of the log)`)
    }
    if (next !== undefined) return diverged(key, `${describe(next.events)} at step ${next.key}`, actual())
    if (mode === "replay") return diverged(key, "the end of the log", actual())
    // A key this execution writes under: the log would hold one step for two (and a replay would refuse it).
    remember(key)
    return New
  }

  /**
   * Looks up the marker of a patch (`ctx.patched`): recorded, `Passed` when the log goes on past this point without
   * it (a step of the code not consumed yet, or the run's end), or new. A marker is looked for ahead in the log as an
   * out-of-order step is (concurrent code may have logged it after a step it precedes here), within
   * `READ_AHEAD_EVENTS`; `readAhead: false` (`deprecatePatch`, which takes the new path either way) does not.
   */
  const probe = (key: string, readAhead: boolean): Probe => {
    if (held.has(key)) {
      const found = lookup(key, () => `the marker of patch ${key}`)
      return found._tag === "Pending" ? { _tag: "Pending", next: found.next } : found
    }
    const next = nextUnconsumed()
    if (next !== undefined || ended) {
      if (!done && !ended && readAhead && heldEvents < READ_AHEAD_EVENTS) return pendingProbe(key, readAhead)
      return { _tag: "Passed" }
    }
    if (!done) return pendingProbe(key, readAhead)
    return New
  }
  const pendingProbe = (key: string, readAhead: boolean): Probe => {
    const seen = pages
    return {
      _tag: "Pending",
      next: Effect.flatMap(load(seen), () =>
        Effect.suspend(() => {
          const found = probe(key, readAhead)
          return found._tag === "Pending" ? found.next : Effect.succeed(found)
        }))
    }
  }

  /** The first step the log holds that the code did not ask for (reading the rest of the log), or undefined. */
  const unconsumed = (): Effect.Effect<{ readonly key: string; readonly description: string } | undefined, LoadError> =>
    Effect.suspend(() => {
      const next = nextUnconsumed()
      if (next !== undefined) return Effect.succeed({ key: next.key, description: describe(next.events) })
      if (done) return Effect.succeed(undefined)
      return Effect.flatMap(load(pages), unconsumed)
    })

  return {
    lookup,
    probe,
    /** The step's key: the explicit one, else `<kind>:<n>` by the order in which the code asks for steps. */
    nextKey: (kind: string, explicit: string | undefined): string => {
      const index = counter++
      if (explicit !== undefined) return explicit
      autoKeys.generated(kind, index)
      return `${kind}:${index}`
    },
    unconsumed
  }
}

export type ReplayCursor = ReturnType<typeof make>

/**
 * The window of `RECENT_KEYS` keys consumed or written: a key remembered as the `n`th is in it while fewer than
 * `RECENT_KEYS` were remembered after it (`remembered`: how many so far).
 */
const inWindow = (n: number, remembered: number): boolean => n > 0 && remembered - n < RECENT_KEYS

/** The explicit keys of the window (any key that is not an auto key of it): the strings, with when each was last used. */
const ExplicitKeys = () => {
  const last = new Map<string, number>()
  let queue: Array<string> = []
  let at: Array<number> = []
  let head = 0
  return {
    remember: (key: string, n: number) => {
      // Keys that left the window are forgotten (unless used again since).
      while (head < queue.length && !inWindow(at[head]!, n)) {
        const old = queue[head]!
        if (last.get(old) === at[head]) last.delete(old)
        head++
      }
      if (head > 1024 && head * 2 > queue.length) {
        queue = queue.slice(head)
        at = at.slice(head)
        head = 0
      }
      last.set(key, n)
      queue.push(key)
      at.push(n)
    },
    used: (key: string, remembered: number): boolean => last.size > 0 && inWindow(last.get(key) ?? 0, remembered)
  }
}

/**
 * The auto keys (`kind:index`) of the last RECENT_KEYS indexes `nextKey` handed out, and when each was consumed or
 * written, by index: no key string is kept. Kept as strings, every key of a long run outlived two young collections
 * (a key stays in the window for 10,000 steps) and was promoted: a resume of 100,000 steps grew its old generation by
 * about 6 MB of keys that were garbage by then. Slot `index % RECENT_KEYS` holds the kind, the index, and when it was
 * remembered; a key is taken as that auto key only when it reads `kind:index` exactly (an explicit key that reads the
 * same is the same key, as before).
 */
const AutoKeys = () => {
  const kinds: Array<string> = []
  const indexes: Array<number> = []
  const rememberedAt: Array<number> = []
  /** The slot of `key` when it is an auto key handed out within the window, else -1. */
  const slotOf = (key: string): number => {
    const colon = key.lastIndexOf(":")
    const digits = key.length - colon - 1
    if (colon <= 0 || digits < 1 || digits > 15 || (digits > 1 && key.charCodeAt(colon + 1) === 48)) return -1
    let index = 0
    for (let i = colon + 1; i < key.length; i++) {
      const c = key.charCodeAt(i) - 48
      if (c < 0 || c > 9) return -1
      index = index * 10 + c
    }
    const slot = index % RECENT_KEYS
    if (indexes[slot] !== index) return -1
    const kind = kinds[slot]!
    return kind.length === colon && key.startsWith(kind) ? slot : -1
  }
  return {
    /** `nextKey` handed out `kind:index`. */
    generated: (kind: string, index: number) => {
      const slot = index % RECENT_KEYS
      kinds[slot] = kind
      indexes[slot] = index
      rememberedAt[slot] = 0
    },
    /** Remembers `key` as the `n`th when it is an auto key of the window; false when it is not one. */
    remember: (key: string, n: number): boolean => {
      const slot = slotOf(key)
      if (slot < 0) return false
      rememberedAt[slot] = n
      return true
    },
    used: (key: string, remembered: number): boolean => {
      const slot = slotOf(key)
      return slot >= 0 && inWindow(rememberedAt[slot]!, remembered)
    }
  }
}
