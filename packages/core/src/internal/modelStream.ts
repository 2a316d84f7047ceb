/**
 * A model call, streamed on the push path (`ModelPort.streamTo`): the provider's loop hands each delta to a plain
 * callback that applies the budget and the middleware's delta hooks, keeps it in the live tier's memory (written behind
 * to the shared `LiveStore`, at the run's head position) and wakes this process's readers, with no Effect work per
 * delta. A budget crossed mid-stream stops the stream there (the provider's call is interrupted, which ends its HTTP
 * request) and no delta after the crossing is kept. The reply is the provider's, assembled exactly as a whole reply.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Errors from "../Errors.js"
import type { DeltaPart } from "../Live.js"
import type { CallContext, DeltaHook } from "../Middleware.js"
import type * as ModelPort from "../ModelPort.js"
import type { StepEnv } from "./stepEnv.js"

/** How a streamed call ended. */
export type Streamed =
  | { readonly _tag: "Finished"; readonly response: ModelPort.ModelResponse }
  | { readonly _tag: "Failed"; readonly error: Errors.ModelError; readonly outputChars: number }
  /** The budget was crossed after `outputChars` characters of output; `costUsd` is what the call cost so far. */
  | { readonly _tag: "OverBudget"; readonly outputChars: number; readonly costUsd: number }

/** Characters of output a delta adds. */
const charsOf = (d: ModelPort.ModelDelta): number => (d._tag === "TextDelta" ? d.text.length : d.arguments.length + (d.name?.length ?? 0))

/**
 * Streams `sent` for step `key`. `overBudget(outputChars)` returns what the call has cost so far once that crosses
 * the budget (else undefined).
 */
export const run = (
  env: StepEnv,
  key: string,
  sent: ModelPort.ModelRequest,
  context: CallContext,
  overBudget: (outputChars: number, model: string | undefined, outputText: () => string) => number | undefined
): Effect.Effect<Streamed> =>
  Effect.gen(function*() {
    const { hub, store } = env.deps.live
    const { runId, tenant } = env
    const seq = env.head()
    let n = yield* Effect.catchAll(store.nextIndex(tenant.tenantId, runId, seq), (e) => env.fault(e))
    const keep = (parts: ReadonlyArray<DeltaPart>): Effect.Effect<void> =>
      parts.length === 0 ? Effect.void : Effect.zipRight(
        Effect.catchAll(store.append(tenant.tenantId, runId, parts.map((part) => ({ seq, n: n++, stepKey: key, part }))), (e) => env.fault(e)),
        hub.changed(tenant.tenantId, runId)
      )
    // Each middleware's delta hook for this call, in the chain's order (they may hold text back, see `DeltaHook`).
    const hooks: Array<DeltaHook> = []
    for (const i of env.deps.interceptors) if (i.modelDeltas !== undefined) hooks.push(yield* i.modelDeltas(sent, context))
    const filtered = (delta: ModelPort.ModelDelta): ReadonlyArray<ModelPort.ModelDelta> => {
      let out: ReadonlyArray<ModelPort.ModelDelta> = [delta]
      for (const h of hooks) out = out.flatMap((d) => h.push(d))
      return out
    }
    const flushed = (): ReadonlyArray<ModelPort.ModelDelta> => {
      let out: ReadonlyArray<ModelPort.ModelDelta> = []
      for (const h of hooks) out = [...out.flatMap((d) => h.push(d)), ...h.flush()]
      return out
    }
    yield* keep([{ _tag: "ModelStreamStarted", attempt: env.options.ownerEpoch }])
    let chars = 0
    // The output's pieces, joined only when the budget asks for its text (`overBudgetOf`'s count by the tokenizer).
    const pieces: Array<string> = []
    const outputText = () => pieces.join("")
    let ended: Streamed | undefined
    let fault: Errors.StoreError | undefined
    // Set when the call must stop early (a budget crossed, a delta not kept): the provider's call is interrupted.
    const stop = Deferred.unsafeMake<void>(FiberId.none)
    /** Keeps deltas in memory (written behind to the shared store) and wakes this process's readers, as plain calls. */
    const kept = (parts: ReadonlyArray<DeltaPart>): boolean => {
      if (parts.length === 0) return true
      const error = env.deps.live.keep(tenant.tenantId, runId, parts.map((part) => ({ seq, n: n++, stepKey: key, part })))
      if (error !== undefined) {
        fault = error
        return false
      }
      hub.wake(tenant.tenantId, runId)

      return true
    }
    // The push path: from the provider's loop through the budget, the middleware's hooks and the live tier to this
    // process's readers, with no Effect work per delta. The deltas that arrived together are kept in one append.
    const sink: ModelPort.DeltaSink = (deltas, model) => {
      if (ended !== undefined || fault !== undefined) return false

      const out: Array<ModelPort.ModelDelta> = []
      for (const part of deltas) {
        chars += charsOf(part)
        if (part._tag === "TextDelta") pieces.push(part.text)
        else pieces.push(part.name ?? "", part.arguments)
        const costUsd = overBudget(chars, model, outputText)
        if (costUsd !== undefined) {
          // Nothing from the crossing delta on is kept.
          ended = { _tag: "OverBudget", outputChars: chars, costUsd }
          kept(out)
          Deferred.unsafeDone(stop, Exit.void)
          return false
        }
        if (hooks.length === 0) out.push(part)
        else for (const d of filtered(part)) out.push(d)
      }
      if (kept(out)) return true
      Deferred.unsafeDone(stop, Exit.void)
      return false
    }
    const called = yield* Effect.raceFirst(
      Effect.either(env.deps.model.streamTo(sent, sink)),
      Effect.as(Deferred.await(stop), undefined)
    )
    if (fault !== undefined) return yield* env.fault(fault)
    if (ended === undefined && called !== undefined) {
      if (Either.isLeft(called)) ended = { _tag: "Failed", error: called.left, outputChars: chars }
      else {
        ended = { _tag: "Finished", response: called.right }
        yield* keep(flushed())
      }
    }
    // The call's events come after its deltas for every reader: the deltas are in the shared store first.
    yield* env.deps.live.flushed
    return ended ?? { _tag: "Failed", error: new Errors.ModelError({ kind: "server_error", reason: "the model's stream ended without a reply", retryable: true }), outputChars: chars }
  })
