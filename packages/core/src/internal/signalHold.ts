/**
 * A wait with no signal yet, and its deadline: it is held in its process (reading the log again when the run is
 * written to, and at least every `pollMillis`) until a signal comes or its deadline passes (`SignalTimedOut`), and
 * after `holdMillis` without either the run pauses at it, with the deadline as its wake-up time.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import * as Errors from "../Errors.js"
import type { EventPayload } from "../Event.js"
import { decode, type Delivery } from "./signalDelivery.js"
import { type Inbox, ticketOf } from "./signals.js"
import type { StepEnv } from "./stepEnv.js"

const reasonOf = (name: string, deadline: number | undefined) =>
  `waiting for signal "${name}"${deadline === undefined ? "" : ` until ${new Date(deadline).toISOString()}`}`

/** The wait at `key` reached its deadline: logged (`SignalTimedOut`), and the code gets `SignalTimeout`. */
export const timedOut = (env: StepEnv, key: string, name: string, deadline: number) =>
  Effect.zipRight(env.append(key, [{ _tag: "SignalTimedOut", name, deadline }]), Effect.fail(new Errors.SignalTimeout({ runId: env.runId, name, deadline })))

/** How a wait is held in its process: see `Deps.signalPollMillis` and `Deps.signalHoldMillis`. */
export interface Timing {
  readonly pollMillis: number
  readonly holdMillis: number
}

/** Holding and pausing for an execution's waits. */
export const make = (env: StepEnv, inbox: Inbox, delivery: Delivery, timing: Timing) => {
  const { holdMillis, pollMillis } = timing
  const { runId } = env

  /**
   * Pauses the run at the wait (a `PauseRequested` with a signal ticket, after `before`): the execution ends, and a
   * resume once a signal came or the deadline passed (a worker's, or anyone's) goes on from here.
   */
  const pause = <A, I>(key: string, name: string, schema: Schema.Schema<A, I>, deadline: number | undefined, before: ReadonlyArray<EventPayload>) =>
    Effect.gen(function*() {
      const ticket = ticketOf(key)
      const reason = reasonOf(name, deadline)
      yield* env.append(key, [...before, { _tag: "PauseRequested", reason, ticket }])
      // A signal whose append beat the pause's was adopted before it (`Ledger.catchUp`): its sender may have found the
      // run still running, and woken nothing. Take it now rather than pause on it.
      if (inbox.oldest(name) !== undefined) {
        const received = yield* delivery.take(key, name)
        if (received !== undefined) return yield* decode(runId, schema, received)
      }
      return yield* env.halt({ _tag: "Paused", ticket, reason, ...(deadline === undefined ? {} : { wakeAt: deadline }) })
    })

  /**
   * Waits in this process until a signal comes or the deadline passes, reading the log again when the run is written
   * to (`written`) and at least every `pollMillis`; after `holdMillis` without either, the run pauses (`pause`).
   */
  const hold = <A, I>(key: string, name: string, schema: Schema.Schema<A, I>, deadline: number | undefined) =>
    Effect.gen(function*() {
      const holdUntil = (yield* Clock.currentTimeMillis) + holdMillis
      while (true) {
        const wake = yield* delivery.written
        const received = yield* delivery.take(key, name)
        if (received !== undefined) return yield* decode(runId, schema, received)
        const now = yield* Clock.currentTimeMillis
        if (deadline !== undefined && now >= deadline) return yield* timedOut(env, key, name, deadline)
        if (now >= holdUntil) return yield* pause(key, name, schema, deadline, [])
        yield* env.checkOwnership(`(waiting for signal "${name}")`)
        yield* Effect.raceFirst(wake, Effect.sleep(Duration.millis(Math.min(pollMillis, holdUntil - now, deadline === undefined ? Infinity : deadline - now))))
      }
    })

  /**
   * A new wait with no signal there yet: its deadline set by `timeout`; logged (`SignalAwaited`, with the deadline),
   * then held in this process, or, with no time to hold it, paused at once (the wait and the pause one batch). A wait
   * of no time is one event saying nothing was there.
   */
  const begin = <A, I>(key: string, name: string, schema: Schema.Schema<A, I>, timeout: Duration.DurationInput | undefined) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const deadline = timeout === undefined ? undefined : now + Duration.toMillis(Duration.decode(timeout))
      if (deadline !== undefined && deadline <= now) return yield* timedOut(env, key, name, deadline)
      const awaited: EventPayload = { _tag: "SignalAwaited", name, ...(deadline === undefined ? {} : { deadline }) }
      if (holdMillis <= 0) return yield* pause(key, name, schema, deadline, [awaited])
      yield* env.append(key, [awaited])
      return yield* hold(key, name, schema, deadline)
    })

  return { hold, begin }
}
