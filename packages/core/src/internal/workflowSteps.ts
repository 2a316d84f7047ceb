/**
 * The workflow's own steps: `step` (an effect whose value is logged), the clock and randomness as steps, `sleep`
 * until a logged time, and `pauseForHuman` (a pause a `resume` answers: `humanPause.ts`).
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Random from "effect/Random"
import * as Schema from "effect/Schema"
import * as Errors from "../Errors.js"
import type { Event } from "../Event.js"
import * as Json from "../Json.js"
import { firstIssue } from "../Tool.js"
import { decodeExactOnce, encodeExactOnce } from "./exactGuard.js"
import * as HumanPause from "./humanPause.js"
import type { StepEnv } from "./stepEnv.js"
import type { Response } from "./executionOptions.js"
import * as Tracing from "./tracing.js"
import { payloadUnlessLazy } from "./lazyPayload.js"

export const make = (env: StepEnv, response: Response | undefined) => {
  /** A step the log holds: its logged value, decoded (an exact value is used as it is), or a fault. */
  const recorded = <A, I>(name: string, stepKey: string, events: ReadonlyArray<Event>, schema: Schema.Schema<A, I>): Effect.Effect<A> => {
    const first = payloadUnlessLazy(events[0]!)
    if (first === undefined || first._tag !== "StepCompleted" || first.name !== name) return env.mismatch(stepKey, events, `step "${name}"`)
    const value = decodeExactOnce(schema, first.value)
    if (Either.isLeft(value)) {
      return env.fault(new Errors.InvalidInput({ what: `logged value of step "${name}" (${stepKey})`, reason: firstIssue(value.left).reason }))
    }
    return Exit.succeed(value.right)
  }

  /** A step run live: its value encoded (through the compiled guard when encoding returns it unchanged) and logged. */
  const live = <A, I, E>(name: string, stepKey: string, effect: Effect.Effect<A, E>, schema: Schema.Schema<A, I>): Effect.Effect<A, E> =>
    Effect.flatMap(effect, (value) => {
      const encoded = Either.mapLeft(encodeExactOnce(schema, value), (e) => firstIssue(e).reason)
      const json = Either.flatMap(encoded, (u) => {
        const r = Json.fromUnknown(u)
        return r.ok ? Either.right(r.json) : Either.left(r.error)
      })
      if (Either.isLeft(json)) return Effect.die(new Errors.InvalidInput({ what: `value of step "${name}"`, reason: json.left }))
      return Effect.as(env.append(stepKey, [{ _tag: "StepCompleted", name, value: json.right }]), value)
    })

  // Replay meets a step per event of a long log: its recorded path builds no generator and no message it does not use.
  const step = <A, I, E>(name: string, effect: Effect.Effect<A, E>, schema: Schema.Schema<A, I>, key: string | undefined, kind = "step"): Effect.Effect<A, E> =>
    Effect.suspend(() => {
      const halted = env.halted()
      if (halted !== undefined) return env.halt(halted)
      const stepKey = env.cursor.nextKey(kind, key)
      return env.answer(stepKey, () => `step "${name}"`, (events) => recorded(name, stepKey, events, schema), () =>
        Tracing.span("artana.step", { "artana.step.name": name, "artana.step_key": stepKey }, live(name, stepKey, effect, schema)))
    })

  return {
    continueAsNew: (input: unknown): Effect.Effect<never> =>
      Effect.suspend(() => env.halt(env.halted() ?? { _tag: "Continued", input })),
    historyLength: () => step("historyLength", Effect.sync(env.head), Schema.Number, undefined, "history"),
    step: <A, I, E>(name: string, effect: Effect.Effect<A, E>, schema: Schema.Schema<A, I>, opts?: { readonly key?: string | undefined }) =>
      step(name, effect, schema, opts?.key),
    now: () => step("now", Clock.currentTimeMillis, Schema.Number, undefined, "now"),
    random: () => step("random", Random.next, Schema.Number, undefined, "random"),
    sleep: (duration: Duration.DurationInput) =>
      Effect.gen(function*() {
        const ms = Duration.toMillis(Duration.decode(duration))
        const until = yield* step("sleep", Effect.map(Clock.currentTimeMillis, (now) => now + ms), Schema.Number, undefined, "sleep")
        const now = yield* Clock.currentTimeMillis
        if (until > now) yield* Effect.sleep(Duration.millis(until - now))
      }),
    pauseForHuman: HumanPause.make(env, response)
  }
}
