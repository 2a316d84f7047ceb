/**
 * The workflow's own steps: `step` (an effect whose value is logged), the clock and randomness as steps, `sleep`
 * until a logged time, and `pauseForHuman` (a pause a `resume` answers).
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Random from "effect/Random"
import * as Schema from "effect/Schema"
import * as Errors from "../Errors.js"
import type { Event } from "../Event.js"
import * as Json from "../Json.js"
import { firstIssue, jsonSchemaOf } from "../Tool.js"
import type { PauseOptions } from "../Workflow.js"
import { decodeExactOnce, encodeExactOnce } from "./exactGuard.js"
import type { StepEnv } from "./stepEnv.js"
import * as Tracing from "./tracing.js"

export const make = (env: StepEnv, response: { readonly payload: unknown } | undefined) => {
  const { runId } = env
  let pendingResponse = response

  /** A step the log holds: its logged value, decoded (an exact value is used as it is), or a fault. */
  const recorded = <A, I>(name: string, stepKey: string, events: ReadonlyArray<Event>, schema: Schema.Schema<A, I>): Effect.Effect<A> => {
    const first = events[0]!.payload
    if (first._tag !== "StepCompleted" || first.name !== name) return env.mismatch(stepKey, events, `step "${name}"`)
    const value = decodeExactOnce(schema, first.value)
    if (Either.isLeft(value)) {
      return env.fault(new Errors.InvalidInput({ what: `logged value of step "${name}" (${stepKey})`, reason: firstIssue(value.left).reason }))
    }
    return Effect.succeed(value.right)
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

  /** The open pause answered: by the logged response, or by the one this execution brings (then logged). */
  const answered = <A, I>(pause: PauseOptions<A, I>, key: string, recorded: ReadonlyArray<Event>, ticket: string, reason: string) =>
    Effect.gen(function*() {
      const decode = (u: unknown): Either.Either<A, string> =>
        pause.schema === undefined
          ? Either.right(u as A)
          : Either.mapLeft(Schema.decodeUnknownEither(pause.schema)(u), (e) => {
            const issue = firstIssue(e)
            return `${issue.path}: ${issue.reason}`
          })
      const responded = recorded.find((e) => e.payload._tag === "HumanResponded")?.payload
      if (responded !== undefined && responded._tag === "HumanResponded") {
        const value = decode(responded.payload)
        if (Either.isLeft(value)) return yield* env.fault(new Errors.InvalidInput({ what: `logged human response (${key})`, reason: value.left }))
        return value.right
      }
      if (pendingResponse === undefined) return yield* env.halt({ _tag: "Paused", ticket, reason })
      const given = pendingResponse.payload
      const value = decode(given)
      if (Either.isLeft(value)) return yield* env.fault(new Errors.InvalidHumanResponse({ runId, ticket, reason: value.left }))
      const encoded = pause.schema === undefined
        ? Either.right(given)
        : Either.mapLeft(Schema.encodeEither(pause.schema)(value.right), (e) => firstIssue(e).reason)
      const json = Either.isLeft(encoded) ? undefined : Json.fromUnknown(encoded.right)
      if (json === undefined || !json.ok) {
        return yield* env.fault(new Errors.InvalidHumanResponse({ runId, ticket, reason: json === undefined || json.ok ? "does not encode" : json.error }))
      }
      pendingResponse = undefined
      yield* Tracing.span("artana.resume", { "artana.step_key": key, "artana.pause.ticket": ticket }, env.append(key, [{ _tag: "HumanResponded", ticket, payload: json.json }]))
      return value.right
    })

  const pauseForHuman = <A, I>(pause: PauseOptions<A, I>): Effect.Effect<A> =>
    Effect.gen(function*() {
      const halted = env.halted()
      if (halted !== undefined) return yield* env.halt(halted)
      const key = env.cursor.nextKey("pause", pause.key)
      const actual = `a pause for a human ("${pause.reason}")`
      let found = env.cursor.lookup(key, () => actual)
      if (found._tag === "Pending") found = yield* env.loaded(found)
      if (found._tag === "Diverged") return yield* env.fault(found.error)
      if (found._tag === "Recorded") {
        const first = found.events[0]!.payload
        if (first._tag !== "PauseRequested") return yield* env.mismatch(key, found.events, actual)
        return yield* answered(pause, key, found.events, first.ticket, first.reason)
      }
      const ticket = crypto.randomUUID()
      const requested = Effect.zipRight(
        Tracing.annotateContent(() => ({ "artana.pause.reason": pause.reason })),
        env.append(key, [{
          _tag: "PauseRequested",
          reason: pause.reason,
          ticket,
          ...(pause.schema === undefined ? {} : { responseSchema: jsonSchemaOf(pause.schema) })
        }])
      )
      yield* Tracing.span("artana.pause", { "artana.step_key": key, "artana.pause.ticket": ticket }, requested)
      return yield* env.halt({ _tag: "Paused", ticket, reason: pause.reason })
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
    pauseForHuman
  }
}
