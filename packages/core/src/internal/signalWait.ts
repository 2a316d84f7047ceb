/**
 * `ctx.waitForSignal`, the step: a recorded wait returns the signal it took (or its timeout), or, when the run
 * stopped while it waited, waits what is left of it; a new wait takes the oldest signal of its name the run has not
 * taken yet (`signalDelivery.ts`), or waits for one until its deadline (`signalHold.ts`).
 */
import * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import * as Errors from "../Errors.js"
import type { Event } from "../Event.js"
import type { WaitForSignalOptions } from "../Workflow.js"
import type * as Ledger from "./ledger.js"
import * as SignalDelivery from "./signalDelivery.js"
import * as SignalHold from "./signalHold.js"
import type { Inbox } from "./signals.js"
import type { StepEnv } from "./stepEnv.js"
import { payloadUnlessLazy } from "./lazyPayload.js"

/** `ctx.waitForSignal`, over an execution's step environment, its inbox and its ledger's catch-up. */
export const make = (env: StepEnv, inbox: Inbox, catchUp: Ledger.Ledger["catchUp"], timing: SignalHold.Timing) => {
  const { runId } = env
  const delivery = SignalDelivery.make(env, inbox, catchUp)
  const holding = SignalHold.make(env, inbox, delivery, timing)

  /** A wait the log holds: the signal it took, its timeout, or (the run stopped while it waited) what is left of it. */
  const recorded = <A, I>(key: string, name: string, schema: Schema.Schema<A, I>, events: ReadonlyArray<Event>, actual: string) =>
    Effect.gen(function*() {
      const first = payloadUnlessLazy(events[0]!)
      const isWait = first !== undefined && (first._tag === "SignalAwaited" || first._tag === "SignalReceived" || first._tag === "SignalTimedOut")
      if (!isWait || first.name !== name) return yield* env.mismatch(key, events, actual)
      for (const event of events) {
        const p = event.payload
        if (p._tag === "SignalReceived") {
          inbox.take(p.signalSeq)
          return yield* SignalDelivery.decode(runId, schema, p)
        }
        if (p._tag === "SignalTimedOut") return yield* new Errors.SignalTimeout({ runId, name, deadline: p.deadline })
      }
      // The run was waiting here when it stopped: a replay stops here too; a live execution waits what is left.
      if (env.mode === "replay") return yield* env.halt({ _tag: "Paused", ticket: key, reason: `waiting for signal "${name}"` })
      return yield* holding.hold(key, name, schema, first._tag === "SignalAwaited" ? first.deadline : undefined)
    })

  return <A, I>(name: string, schema: Schema.Schema<A, I>, options: WaitForSignalOptions = {}): Effect.Effect<A, Errors.WaitForSignalError> =>
    Effect.gen(function*() {
      const halted = env.halted()
      if (halted !== undefined) return yield* env.halt(halted)
      const key = env.cursor.nextKey("signal", options.key)
      const actual = `a wait for signal "${name}"`
      let found = env.cursor.lookup(key, () => actual)
      if (found._tag === "Pending") found = yield* env.loaded(found)
      if (found._tag === "Diverged") return yield* env.fault(found.error)
      if (found._tag === "Recorded") return yield* recorded(key, name, schema, found.events, actual)
      const received = yield* delivery.take(key, name)
      if (received !== undefined) return yield* SignalDelivery.decode(runId, schema, received)
      return yield* holding.begin(key, name, schema, options.timeout)
    })
}
