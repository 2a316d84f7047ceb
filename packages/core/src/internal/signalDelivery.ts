/**
 * A signal delivered to a wait: the oldest signal of its name the run has not taken, taken after catching up with
 * senders and logged as the wait's `SignalReceived`, then decoded with the wait's schema; and the wake-up of a wait
 * held in its process when the run is written to.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Errors from "../Errors.js"
import type { EventPayload } from "../Event.js"
import { firstIssue } from "../Tool.js"
import type * as Ledger from "./ledger.js"
import type { Inbox } from "./signals.js"
import type { StepEnv } from "./stepEnv.js"

export type Received = Extract<EventPayload, { readonly _tag: "SignalReceived" }>

/** A received signal's payload decoded with the wait's schema (`InvalidSignalPayload` when it does not decode). */
export const decode = <A, I>(runId: string, schema: Schema.Schema<A, I>, received: Received) => {
  const value = Schema.decodeUnknownEither(schema)(received.payload)
  if (Either.isRight(value)) return Effect.succeed(value.right)
  const issue = firstIssue(value.left)
  return Effect.fail(new Errors.InvalidSignalPayload({ runId, name: received.name, signalId: received.signalId, reason: `${issue.path}: ${issue.reason}` }))
}

/** Delivery for an execution's waits, over its inbox and its ledger's catch-up. */
export const make = (env: StepEnv, inbox: Inbox, catchUp: Ledger.Ledger["catchUp"]) => {
  const { runId } = env

  /** Takes the oldest signal of `name` into step `key` (logged), if the run has one: catches up with senders first. */
  const take = (key: string, name: string) =>
    Effect.gen(function*() {
      const caught = yield* Effect.catchAll(catchUp(), env.fault)
      if (caught === "foreign") {
        return yield* env.fault(new Errors.SequenceConflict({ runId, expectedSeq: env.head() }))
      }
      const signal = inbox.oldest(name)
      if (signal === undefined) return undefined
      const received: Received = { _tag: "SignalReceived", name, signalId: signal.payload.signalId, signalSeq: signal.seq, payload: signal.payload.payload }
      yield* env.append(key, [received])
      inbox.take(signal.seq)
      return received
    })

  /**
   * Resolves once the run is written to after this call: by this process (its live hub), or by another one when the
   * kernel has `RunNotices` (on PostgreSQL, a NOTIFY). Taken before the log is read, so no write is missed.
   */
  const written = Effect.gen(function*() {
    const here = (yield* env.deps.live.hub.ticket(env.tenant.tenantId, runId)).await
    const notices = env.deps.notices
    if (notices === undefined) return here
    return Effect.raceFirst(here, yield* notices.ticket(env.tenant.tenantId, runId))
  })

  return { take, written }
}

export type Delivery = ReturnType<typeof make>
