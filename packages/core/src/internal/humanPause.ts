/**
 * `pauseForHuman`: the run pauses (`PauseRequested`, with a ticket and the response's JSON Schema) until a `resume`
 * brings a response; the response, decoded with the pause's schema, is logged (`HumanResponded`) and returned, and a
 * replay returns the logged one.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Errors from "../Errors.js"
import type { Event } from "../Event.js"
import * as Json from "../Json.js"
import { firstIssue, jsonSchemaOf } from "../Tool.js"
import type { PauseOptions } from "../Workflow.js"
import type { StepEnv } from "./stepEnv.js"
import type { Response } from "./executionOptions.js"
import * as Tracing from "./tracing.js"
import { payloadUnlessLazy } from "./lazyPayload.js"

/** An execution's `pauseForHuman`; `response` is the one a `resume` brings for the open pause (logged once taken). */
export const make = (env: StepEnv, response: Response | undefined) => {
  const { runId } = env
  let pendingResponse = response

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
      const { payload: given, by } = pendingResponse
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
      yield* Tracing.span("artana.resume", { "artana.step_key": key, "artana.pause.ticket": ticket }, env.append(key, [{ _tag: "HumanResponded", ticket, payload: json.json, ...(by === undefined ? {} : { respondedBy: by }) }]))
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
        const first = payloadUnlessLazy(found.events[0]!)
        if (first === undefined || first._tag !== "PauseRequested") return yield* env.mismatch(key, found.events, actual)
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

  return pauseForHuman
}
