/**
 * A model call, streamed: each delta is kept in the `LiveStore` (at the run's head position) and wakes this process's
 * readers as it comes, after the middleware's delta hooks; a budget crossed mid-stream stops the stream there (the
 * provider's HTTP request is interrupted) and no delta after the crossing is kept. The reply is the `Finished` part's,
 * assembled by the provider exactly as a whole reply.
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as Errors from "../Errors.js"
import type { DeltaPart } from "../Live.js"
import type { CallContext, DeltaHook } from "../Middleware.js"
import type * as ModelPort from "../ModelPort.js"
import type { StepEnv } from "./stepEnv.js"

/** How a streamed call ended. */
export type Streamed =
  | { readonly _tag: "Finished"; readonly response: ModelPort.ModelResponse }
  | { readonly _tag: "Failed"; readonly error: Errors.ModelError }
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
  overBudget: (outputChars: number) => number | undefined
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
    let ended: Streamed | undefined
    // A chunk at a time: the deltas that arrived together are kept in one append and wake the readers once.
    yield* env.deps.model.stream(sent).pipe(
      Stream.chunks,
      Stream.runForEachWhile((chunk) => {
        const out: Array<ModelPort.ModelDelta> = []
        for (const part of chunk) {
          if (part._tag === "Finished") {
            ended = { _tag: "Finished", response: part.response }
            return Effect.as(keep([...out, ...flushed()]), false)
          }
          chars += charsOf(part)
          const costUsd = overBudget(chars)
          if (costUsd !== undefined) {
            // Nothing from the crossing delta on is kept.
            ended = { _tag: "OverBudget", outputChars: chars, costUsd }
            return Effect.as(keep(out), false)
          }
          for (const d of filtered(part)) out.push(d)
        }
        return Effect.as(keep(out), true)
      }),
      Effect.catchAll((error) => Effect.sync(() => void (ended = { _tag: "Failed", error })))
    )
    // The call's events come after its deltas for every reader: the deltas are in the shared store first.
    yield* env.deps.live.flushed
    return ended ?? { _tag: "Failed", error: new Errors.ModelError({ kind: "server_error", reason: "the model's stream ended without a reply", retryable: true }) }
  })
