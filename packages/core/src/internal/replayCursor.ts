/**
 * The replay cursor: a run's log, pulled a page at a time as the code asks for steps (`heldLog.ts` holds the steps
 * read and not yet consumed). A lookup says whether the step is recorded (its events), new (the code may run it
 * live), a divergence from the log, or pending (more of the log must be read first: an effect that reads it and
 * answers). Reused keys are caught within a window of recent keys (`recentKeys.ts`).
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Errors from "../Errors.js"
import type { Event } from "../Event.js"
import * as HeldLog from "./heldLog.js"
import type { LoadError, Log } from "./heldLog.js"
import * as RecentKeys from "./recentKeys.js"
import { describe, isSettled } from "./replayStep.js"

export type { LoadError, Log } from "./heldLog.js"
export { RECENT_KEYS } from "./recentKeys.js"
export { describe, isSettled, leadOf, PATCH_KEY_PREFIX, PATCH_STEP_NAME, patchKey } from "./replayStep.js"

/** What the log says of a step the code asks for, once enough of it was read. */
export type Resolved =
  | { readonly _tag: "Recorded"; readonly events: ReadonlyArray<Event> }
  | { readonly _tag: "New" }
  | { readonly _tag: "Diverged"; readonly error: Errors.NonDeterminism }

/** A lookup: resolved, or `Pending` (its `next` reads more of the log and resolves it). */
export type Lookup = Resolved | { readonly _tag: "Pending"; readonly next: Effect.Effect<Resolved, LoadError> }

/**
 * What the log says of a patch marker the code asks for: recorded (the run reached this point with the patched code),
 * `Passed` (the log goes on past this point without it: the run passed it before the change), or new (the run is here
 * for the first time).
 */
export type Probed = Resolved | { readonly _tag: "Passed" }
export type Probe = Probed | { readonly _tag: "Pending"; readonly next: Effect.Effect<Probed, LoadError> }

/**
 * How far the cursor reads ahead for a step the code asks for that it has not met yet (steps run concurrently
 * under explicit keys are logged in the order they finished): past this many events held, the step is not in the
 * log's near future and the code diverged. Memory stays bounded even then.
 */
export const READ_AHEAD_EVENTS = 20_000

const New: Lookup = { _tag: "New" }

const Passed: Probe = { _tag: "Passed" }

/** How many times a new step yields to the other fibers, with no step consumed meanwhile, before it waits by the clock. */
const PATIENCE = 64
/**
 * How long, by the clock, a new step then waits with no step consumed before it diverges, while another fiber of the
 * workflow's code is alive (it may be doing work between its steps: a slow computation, a timer, a call outside the
 * kernel; or be waiting for a step too, or joining the others: nothing tells these apart from outside).
 */
const PATIENCE_MS = 30_000

/**
 * Waits while other fibers consume logged steps (each yield lets them run) until `ready()`: true once it is; false
 * when no step was consumed for `PATIENCE` yields in a row and no other fiber of the workflow's code is alive to
 * consume one, or, while one is, for `PATIENCE_MS` by the real clock (1 ms, doubling, at most a second at a time).
 */
const whileOthersConsume = (consumed: () => number, othersAlive: () => boolean, ready: () => boolean): Effect.Effect<boolean> => {
  const pause = (ms: number): Effect.Effect<void> =>
    ms === 0 ? Effect.yieldNow() : Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))
  const loop = (seen: number, idle: number, waitedMs: number): Effect.Effect<boolean> =>
    Effect.suspend((): Effect.Effect<boolean> => {
      if (ready()) return Effect.succeed(true)
      if (consumed() !== seen) return loop(consumed(), 0, 0)
      if (waitedMs >= PATIENCE_MS || (idle >= PATIENCE && !othersAlive())) return Effect.succeed(false)
      const ms = idle < PATIENCE ? 0 : Math.min(2 ** (idle - PATIENCE), 1_000)
      return Effect.flatMap(pause(ms), () => loop(seen, idle + 1, waitedMs + ms))
    })
  return loop(consumed(), 0, 0)
}

/**
 * A new step met while the log still holds steps nobody asked for (or a logged one that would run anything, met before
 * the steps logged ahead of it: `target`): it waits while other fibers consume them (`whileOthersConsume`), then is
 * looked up again (`retry`: new once none is left, or the target once it is the first left); else it diverges at the
 * first step left.
 */
const afterOthers = (
  steps: HeldLog.HeldLog,
  consumed: () => number,
  retry: () => Lookup,
  divergedAt: (step: HeldLog.Step) => Resolved,
  othersAlive: () => boolean,
  target?: HeldLog.Step
): Effect.Effect<Resolved, LoadError> => {
  const firstLeft = () => {
    const next = steps.nextUnconsumed()
    return next === undefined || next === target ? undefined : next
  }
  return Effect.flatMap(whileOthersConsume(consumed, othersAlive, () => firstLeft() === undefined), () => {
    const next = firstLeft()
    if (next !== undefined) return Effect.succeed(divergedAt(next))
    const found = retry()
    return found._tag === "Pending" ? found.next : Effect.succeed(found)
  })
}

export const make = (runId: string, log: Log | undefined, mode: "live" | "replay", othersAlive: () => boolean = () => true) => {
  const steps = HeldLog.make(log)
  // The keys consumed or written, within the window that catches a reused key.
  const keys = RecentKeys.make()
  let counter = 0
  // How many recorded steps the code consumed: what a new step waiting on concurrent branches watches for progress.
  let consumedSteps = 0
  const handovers = handoversOf(steps, () => consumedSteps, othersAlive, (key, actual) => lookup(key, actual))

  const diverged = (key: string, expected: string, actual: string): Resolved => ({
    _tag: "Diverged",
    error: new Errors.NonDeterminism({ runId, stepKey: key, expected, actual })
  })
  const pending = (key: string, actual: () => string): Lookup => {
    const seen = steps.state.pages
    return {
      _tag: "Pending",
      next: Effect.flatMap(steps.load(seen), () =>
        Effect.suspend(() => {
          const found = lookup(key, actual)
          return found._tag === "Pending" ? found.next : Effect.succeed(found)
        }))
    }
  }

  /**
   * Finds a step's recorded events, proves the code may run it live, or says more of the log must be read first.
   * Synchronous on purpose: replay calls it once per step, and only a page boundary needs an effect. `actual` is
   * computed only when a divergence is reported.
   */
  const lookup = (key: string, actual: () => string): Lookup => {
    const recorded = steps.get(key)
    if (keys.used(key)) return diverged(key, "a step key used once", `${actual()} reusing it`)
    if (recorded !== undefined) {
      // Its events may go on in the pages not read yet: until the log ends, a step is whole once it is settled and
      // its last batch is followed by another's.
      if (!steps.state.done && (steps.state.lastKey === key || !isSettled(recorded.events))) return pending(key, actual)
      const next = steps.nextUnconsumed()
      // A settled step may be met out of the log's order (steps run concurrently, each under its own explicit key,
      // are logged in the order they finished); one that would run anything (a tool call in doubt, an unanswered
      // pause, a model call without a result) may not: the code changed its order, and it would run before the
      // steps that preceded it in the log.
      if (next !== undefined && next !== recorded && !isSettled(recorded.events)) {
        const divergedAt = (at: HeldLog.Step) => diverged(key, `${describe(at.events)} at step ${at.key}`, `${actual()} at step ${key}`)
        // Live, other branches may still consume the steps ahead of it (concurrent branches met in another order than
        // the first time): it waits for them as a new step does, and runs once it is the first left.
        if (mode === "live") return { _tag: "Pending", next: afterOthers(steps, () => consumedSteps, () => lookup(key, actual), divergedAt, othersAlive, recorded) }
        return divergedAt(next)
      }
      steps.consume(recorded)
      consumedSteps++
      keys.remember(key)
      return recorded
    }
    const next = steps.nextUnconsumed()
    if (!steps.state.done) {
      if (next === undefined || steps.state.heldEvents < READ_AHEAD_EVENTS) return pending(key, actual)
      return diverged(key, `${describe(next.events)} at step ${next.key}`, `${actual()} (not met within ${READ_AHEAD_EVENTS} events of the log)`)
    }
    // A handover waits for the other branches to consume the log (`othersConsumed`): a step the log does not hold is
    // where the handover cut its branch off the first time (in flight, or not reached), so it waits to be cut off again.
    const cut = handovers.cutOff(key, actual)
    if (cut !== undefined) return cut
    if (next !== undefined) {
      // A step the log does not hold, met while it still holds steps the code did not ask for yet: when branches run
      // concurrently under explicit keys, a step logged when it ended (a memoized step, a model call, a one-commit
      // tool) was logged after the steps other branches logged while it was in flight (a crash, or another branch's
      // pause, ended the execution before it). The other branches consume those steps as they replay: give them the
      // chance before calling this a divergence. The new step runs only once no logged step is left unconsumed.
      const divergedAt = (at: HeldLog.Step) => diverged(key, `${describe(at.events)} at step ${at.key}`, actual())
      if (mode === "live") return { _tag: "Pending", next: afterOthers(steps, () => consumedSteps, () => lookup(key, actual), divergedAt, othersAlive) }
      return divergedAt(next)
    }
    if (mode === "replay") {
      if (!steps.state.continued) return diverged(key, "the end of the log", actual())
      // The run handed over: a concurrent branch's step in flight then was never logged. Met at the log's end, it waits
      // for the handover while another fiber could still get there (then as above); else a divergence.
      return { _tag: "Pending", next: handovers.atLogEnd(key, () => diverged(key, "the end of the log", actual()), actual) }
    }
    // A key this execution writes under: the log would hold one step for two (and a replay would refuse it).
    keys.remember(key)
    return New
  }

  const probe = prober(steps, lookup)

  const { unconsumed, skippedAtHandover } = restOf(steps)

  return {
    lookup,
    probe,
    /** See `handoversOf`. */
    othersConsumed: handovers.othersConsumed,
    handedOver: handovers.handedOver,
    handoverPending: handovers.pending,
    skippedAtHandover,
    /** The step's key: the explicit one, else `<kind>:<n>` by the order in which the code asks for steps. */
    nextKey: (kind: string, explicit: string | undefined): string => {
      const index = counter++
      if (explicit !== undefined) return explicit
      const key = `${kind}:${index}`
      keys.generated(kind, index, key)
      return key
    },
    unconsumed
  }
}

/** What the log holds past what the code asked for, read to its end when asked (`unconsumed`, `skippedAtHandover`). */
const restOf = (steps: HeldLog.HeldLog) => {
  /** The first step the log holds that the code did not ask for (reading the rest of the log), or undefined. */
  const unconsumed = (): Effect.Effect<{ readonly key: string; readonly description: string } | undefined, LoadError> =>
    Effect.suspend(() => {
      const next = steps.nextUnconsumed()
      if (next !== undefined) return Effect.succeed({ key: next.key, description: describe(next.events) })
      if (steps.state.done) return Effect.succeed(undefined)
      return Effect.flatMap(steps.load(steps.state.pages), unconsumed)
    })

  /**
   * Reads the rest of the log (its signals reach the inbox) for a handover, and returns the first step the log holds
   * after the last step the code consumed (code that skipped it: a divergence), or undefined. Steps before that one
   * that the code did not ask for are passed over: a concurrent branch's, interrupted by the handover. A page read
   * that holds a step ends the reading there, so the rest of a long log is never held.
   */
  const skippedAtHandover = (): Effect.Effect<{ readonly key: string; readonly description: string } | undefined, LoadError> =>
    Effect.suspend(() => {
      const next = steps.unconsumedAfter(steps.state.consumedSeq)
      if (next !== undefined) return Effect.succeed({ key: next.key, description: describe(next.events) })
      if (steps.state.done) return Effect.succeed(undefined)
      return Effect.flatMap(steps.load(steps.state.pages), skippedAtHandover)
    })
  return { unconsumed, skippedAtHandover }
}

/**
 * A handover (a continue-as-new) of a replayed or resumed execution, while it waits for the other branches to consume
 * the steps the log holds (`othersConsumed`): a step the log does not hold is where the handover cut its branch off the
 * first time (in flight, or not reached), so it waits (`cutOff`); once the run hands over (`handedOver`) that branch is
 * interrupted, however the code combines its branches, and if the handover is given up (interrupted), the step is
 * looked up again (`relookup`).
 */
const handoversOf = (
  steps: HeldLog.HeldLog,
  consumed: () => number,
  othersAlive: () => boolean,
  relookup: (key: string, actual: () => string) => Lookup
) => {
  // Completed true once the run hands over, false if the handover was given up.
  let handover: Deferred.Deferred<boolean> | undefined
  const after = (waiting: Deferred.Deferred<boolean>, key: string, actual: () => string): Effect.Effect<Resolved, LoadError> =>
    Effect.flatMap(Deferred.await(waiting), (handedOver) => {
      if (handedOver) return Effect.interrupt
      const found = relookup(key, actual)
      return found._tag === "Pending" ? found.next : Effect.succeed(found)
    })
  return {
    cutOff: (key: string, actual: () => string): Lookup | undefined =>
      handover === undefined ? undefined : { _tag: "Pending", next: after(handover, key, actual) },
    /**
     * A replay's step met at the end of the log of a run that handed over (a concurrent branch's step in flight then
     * was never logged): waits for the handover while another fiber could still get there, then is cut off; else
     * `diverged`.
     */
    atLogEnd: (key: string, diverged: () => Resolved, actual: () => string): Effect.Effect<Resolved, LoadError> =>
      Effect.flatMap(whileOthersConsume(consumed, othersAlive, () => handover !== undefined), (started) =>
        !started || handover === undefined ? Effect.sync(diverged) : after(handover, key, actual)),
    /**
     * Before a handover, live or replayed: the other branches consume the steps the log holds (read so far) first, as
     * they did before the handover the first time (a plain wait of their code may put them after it now). Done once
     * none is left, or nobody consumes one within the patience (`skippedAtHandover` judges).
     */
    othersConsumed: Effect.suspend(() => {
      const waiting = Deferred.unsafeMake<boolean>(FiberId.none)
      handover = waiting
      return Effect.onInterrupt(
        Effect.asVoid(whileOthersConsume(consumed, othersAlive, () => steps.nextUnconsumed() === undefined)),
        () =>
          Effect.sync(() => {
            if (handover === waiting) handover = undefined
            Deferred.unsafeDone(waiting, Exit.succeed(false))
          })
      )
    }),
    /**
     * The execution stops (a handover after `othersConsumed`, or any other halt meanwhile), its calls in flight ended:
     * the branches cut off are interrupted, never looked up again.
     */
    handedOver: (): void => {
      if (handover !== undefined) Deferred.unsafeDone(handover, Exit.succeed(true))
    },
    /** Whether a handover is waiting, and, when one is, how it ends (true: handed over; false: given up). */
    pending: (): Effect.Effect<boolean> | undefined => (handover === undefined ? undefined : Deferred.await(handover))
  }
}

export type ReplayCursor = ReturnType<typeof make>

/**
 * The cursor's `probe`, over its held log and its `lookup` (which consumes a marker once it is held).
 */
const prober = (steps: HeldLog.HeldLog, lookup: (key: string, actual: () => string) => Lookup) => {
  /**
   * Looks up the marker of a patch (`ctx.patched`): recorded, `Passed` when the log goes on past this point without
   * it (a step of the code not consumed yet, or the run's end), or new. A marker is looked for ahead in the log as an
   * out-of-order step is (concurrent code may have logged it after a step it precedes here), within
   * `READ_AHEAD_EVENTS`; `readAhead: false` (`deprecatePatch`, which takes the new path either way) does not.
   */
  const probe = (key: string, readAhead: boolean): Probe => {
    if (steps.get(key) !== undefined) {
      const found = lookup(key, () => `the marker of patch ${key}`)
      return found._tag === "Pending" ? { _tag: "Pending", next: found.next } : found
    }
    const next = steps.nextUnconsumed()
    if (next !== undefined || steps.state.ended) {
      if (!steps.state.done && !steps.state.ended && readAhead && steps.state.heldEvents < READ_AHEAD_EVENTS) return pendingProbe(key, readAhead)
      return Passed
    }
    if (!steps.state.done) return pendingProbe(key, readAhead)
    return New
  }
  const pendingProbe = (key: string, readAhead: boolean): Probe => {
    const seen = steps.state.pages
    return {
      _tag: "Pending",
      next: Effect.flatMap(steps.load(seen), () =>
        Effect.suspend(() => {
          const found = probe(key, readAhead)
          return found._tag === "Pending" ? found.next : Effect.succeed(found)
        }))
    }
  }
  return probe
}
