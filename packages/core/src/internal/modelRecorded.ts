/** A model call the log holds: its logged result, or the error it ended with (a denial, a budget stop, a failure). */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as Errors from "../Errors.js"
import type { AssistantMessage, ChatMessage } from "../Chat.js"
import type { Event, EventPayload } from "../Event.js"
import type * as ModelPort from "../ModelPort.js"
import { StoredEvent } from "./hash.js"
import * as Lazy from "./lazyPayload.js"
import { failed, UNPRICED } from "./modelBudget.js"
import { replayed } from "./modelRequested.js"
import type { ModelCall } from "./modelStep.js"
import * as RequestHash from "./requestHash.js"
import type { StepEnv } from "./stepEnv.js"

/** Told of a logged call a replay passes: the messages it logged as sent, and its logged reply. */
export type Seen = (sent: ReadonlyArray<ChatMessage>, reply: AssistantMessage | undefined) => void

/** The reply a logged call's `ModelCompleted` holds, if it has one. */
const replyOf = (recorded: ReadonlyArray<Event>): AssistantMessage | undefined => {
  const completed = recorded.find((e) => Lazy.tagOf(e) === "ModelCompleted")?.payload
  return completed?._tag === "ModelCompleted" ? completed.message : undefined
}

/**
 * The logged call at `key` (a mismatch when it is not the call of the request's hash). A `ModelRequested` a replay
 * read lazily (`lazyPayload.ts`) whose stored text is the text this request's would have is that payload, not decoded
 * (the hash computed and the text compared in one pass, `replayed`); any other is decoded now, and one that does not
 * decode halts the execution with the read's `StoreError`, as the read itself would have. `seen` (the middleware's
 * `replayedModel` hooks) is told of a call whose `ModelRequested` is the request's.
 */
export const recordedCall = (
  env: StepEnv,
  key: string,
  recorded: ReadonlyArray<Event>,
  request: ModelPort.ModelRequest,
  seen?: Seen | undefined
): Effect.Effect<ModelCall, Errors.ModelError | Errors.PolicyDenied> => {
  const lead = recorded[0]!
  let requestHash: string
  if (Lazy.isLazy(lead)) {
    const replay = replayed(request, StoredEvent.payloadTextOf(lead) ?? "", env.renders)
    if (replay.same) {
      // The stored text is the request's own: the chain sent its messages as they were.
      seen?.(request.messages, replyOf(recorded))
      return recordedResult(env, recorded, request.model)
    }
    requestHash = replay.requestHash
  } else {
    requestHash = RequestHash.requestHash(request, env.renders)
  }
  const first = Lazy.decodeLazy(lead)
  if (Either.isLeft(first)) return env.fault(first.left)
  return recordedOf(env, key, recorded, first.right, requestHash, seen)
}

const recordedOf = (env: StepEnv, key: string, recorded: ReadonlyArray<Event>, first: EventPayload, requestHash: string, seen: Seen | undefined) => {
  const runId = env.runId
  if (first._tag === "BudgetExceeded") return failed(env, new Errors.BudgetExceeded({ runId, limitUsd: first.limitUsd, spentUsd: first.spentUsd }))
  if (first._tag !== "ModelRequested" || first.requestHash !== requestHash) {
    return env.mismatch(key, recorded, `a model call (request ${requestHash.slice(0, 12)})`)
  }
  seen?.(first.messages, replyOf(recorded))
  return recordedResult(env, recorded, first.model)
}

/** The result of a logged call whose `ModelRequested` is the request's (`model`: the model it names). */
const recordedResult = (env: StepEnv, recorded: ReadonlyArray<Event>, model: string): Effect.Effect<ModelCall, Errors.ModelError | Errors.PolicyDenied> => {
  const runId = env.runId
  for (const e of recorded) {
    // By its tag first: a lazy `ModelRequested` (the lead) is not decoded.
    const tag = Lazy.tagOf(e)
    if (tag !== "PolicyDenied" && tag !== "BudgetExceeded") continue
    const p = e.payload
    if (p._tag === "PolicyDenied") return Effect.fail(new Errors.PolicyDenied({ tool: "model", reason: p.reason }))
    if (p._tag === "BudgetExceeded") return failed(env, new Errors.BudgetExceeded({ runId, limitUsd: p.limitUsd, spentUsd: p.spentUsd }))
  }
  const completed = recorded.find((e) => Lazy.tagOf(e) === "ModelCompleted")?.payload
  if (completed?._tag === "ModelCompleted") return Exit.succeed({ message: completed.message, usage: completed.usage, costUsd: completed.costUsd })
  const modelFailed = recorded.find((e) => Lazy.tagOf(e) === "ModelFailed")?.payload
  if (modelFailed?._tag === "ModelFailed" && modelFailed.kind === UNPRICED) return failed(env, new Errors.BudgetUnpriced({ runId, model }))
  const kind = modelFailed?._tag === "ModelFailed" ? Schema.decodeUnknownOption(Errors.ModelError.fields.kind)(modelFailed.kind) : undefined
  return Effect.fail(new Errors.ModelError({
    kind: kind?._tag === "Some" ? kind.value : "unknown",
    reason: modelFailed?._tag === "ModelFailed" ? modelFailed.error : "the logged model call has no result",
    retryable: false
  }))
}
