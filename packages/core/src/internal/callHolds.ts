/**
 * What a model call holds against its lineage's budget beyond its first hold (one attempt's estimate):
 *
 * - *A re-ask.* An adapter that refuses a reply (a malformed tool call) and asks again is billed for every attempt, so
 *   each re-ask first holds what the call may cost with it: everything billed so far and one more attempt's estimate,
 *   beyond what is held already. Refused (the lineage has no room), the reply is not asked for again (`retrying.ts`'s
 *   `billedRetry`): the call fails with the model's error, within the budget.
 * - *A stream past its hold.* A server may stream past the output cap the estimate assumed. Siblings that took their
 *   holds later were granted room on the premise that this call stays within its hold, so the stream may not spend
 *   their room: once its output costs more than is held for it, it asks for more (what it passed the hold by, and as
 *   much again as it holds ahead, else what the lineage has left). Refused, its output's tokens are counted by the model's
 *   tokenizer (the stream counts 4 characters a token, an estimate): within the hold, it goes on, else it is stopped
 *   there. A hold in the kernel's
 *   memory is answered at once, before the next delta; a store's (another process may hold room) is one small write,
 *   and the deltas that arrive while it is written go on (a stream is never stopped for a hold that may be granted).
 *
 * Every hold is the call's own (its key and a label: the call's key would replace the call's hold) and is released
 * with it.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Runtime from "effect/Runtime"
import type { Usage } from "../Chat.js"
import { costOf, type Price } from "../Pricing.js"
import type { Held, Over } from "./inFlight.js"
import type { StepEnv } from "./stepEnv.js"

export interface CallHolds {
  /** Whether another attempt may be made, after attempts that billed `billed`: held first when it needs more room. */
  readonly reAsk: (billed: Usage) => Effect.Effect<boolean>
  /** What is held for the call now, in USD. */
  readonly heldUsd: () => number
  /**
   * A stream's check, as its output comes (synchronous): whether output that costs `costUsd` may go on. Past what is
   * held it asks for more room; refused, `within` is asked whether the output is within the hold after all (its tokens
   * counted by the model's tokenizer: the stream's own count is an estimate). False once the lineage refused it and
   * it is not (stop the stream), true while a store or the tokenizer answers.
   */
  readonly covers: (costUsd: number, within: () => Effect.Effect<boolean>) => boolean
  /** Releases the call's hold and every other it took (a stream's pending request for room interrupted first). */
  readonly release: Effect.Effect<void>
}

export const make = (env: StepEnv, key: string, price: Price, estimateUsd: number, first: Held, runtime: Runtime.Runtime<never>): CallHolds => {
  const releases: Array<Effect.Effect<void>> = [first.release]
  const limitUsd = env.tenant.budgetUsdLimit
  let heldUsd = estimateUsd
  let released = false
  let refused = false
  let pending: Fiber.RuntimeFiber<boolean> | undefined
  // The lineage's spend read again: a sibling that ended since the call's hold (its hold released) spent its room.
  // Unread, it is no room (fail closed).
  const spentNow = env.options.lineageSpend === undefined
    ? Effect.sync(() => env.spentUsd())
    : Effect.orElseSucceed(Effect.map(env.options.lineageSpend, (lineage) => Math.max(env.spentUsd(), lineage)), () => Number.POSITIVE_INFINITY)
  /**
   * Holds `usd` more for the call; what the lineage had when it was refused, else undefined. Interruptible only while
   * the holder answers (a store's hold request interrupted releases what it may have taken).
   */
  const take = (usd: number, spentUsd: number, label: string): Effect.Effect<Over | undefined> =>
    Effect.uninterruptibleMask((restore) => Effect.match(
      restore(env.deps.budgetHolds.hold({
        tenantId: env.tenant.tenantId,
        rootRunId: env.options.rootRunId,
        runId: env.runId,
        stepKey: `${key}#${label}:${releases.length}`,
        usd,
        limitUsd,
        spentUsd
      })),
      {
        // A hold the store could not take is no room (fail closed).
        onFailure: (): Over => ({ spentUsd: limitUsd, heldUsd: 0 }),
        onSuccess: (held) => {
          if (!("release" in held)) return held
          releases.push(held.release)
          heldUsd += usd
          return undefined
        }
      }
    ))
  const more = (needUsd: number): Effect.Effect<boolean> =>
    Effect.suspend(() => {
      if (!(needUsd > 0)) return Effect.succeed(true)
      if (!Number.isFinite(needUsd)) return Effect.succeed(false)
      return Effect.flatMap(spentNow, (spent) => Effect.map(take(needUsd, spent, "re-ask"), (over) => over === undefined))
    })
  // After a stream's pending request for room is answered: what it holds counts (it may already hold the room).
  const reAsk = (billed: Usage): Effect.Effect<boolean> =>
    Effect.zipRight(
      Effect.suspend(() => (pending === undefined ? Effect.void : Fiber.await(pending))),
      Effect.suspend(() => more((costOf(billed, price) ?? Number.POSITIVE_INFINITY) + estimateUsd - heldUsd))
    )

  /** Room for `costUsd` of output: what it passed the hold by and one estimate ahead, else what is left, else just the need. */
  const extend = (costUsd: number): Effect.Effect<boolean> =>
    Effect.flatMap(spentNow, (spent) =>
      Effect.suspend(() => {
        const need = costUsd - heldUsd
        if (!(need > 0)) return Effect.succeed(true)
        if (!Number.isFinite(need)) return Effect.succeed(false)
        const justTheNeed = Effect.map(take(need, spent, "stream"), (over) => over === undefined)
        // Ahead: as much again as is held (at least one estimate), so a runaway stream asks a few times, not per token.
        return Effect.flatMap(take(need + Math.max(estimateUsd, heldUsd), spent, "stream"), (over) => {
          if (over === undefined) return Effect.succeed(true)
          // What the lineage has left (the need alone when a rounding refuses that).
          const left = limitUsd - over.spentUsd - over.heldUsd
          return left > need ? Effect.flatMap(take(left, spent, "stream"), (o) => (o === undefined ? Effect.succeed(true) : justTheNeed)) : justTheNeed
        })
      }))
  const settle = (exit: Exit.Exit<boolean>) => {
    pending = undefined
    if (!Exit.isSuccess(exit) || !exit.value) refused = true
  }
  const covers = (costUsd: number, within: () => Effect.Effect<boolean>): boolean => {
    if (!(costUsd > heldUsd)) return true
    if (refused || released) return false
    if (pending !== undefined) return true
    // Run at once: a hold in the kernel's memory is answered before this returns; a store's is awaited by its fiber
    // (interrupted with the call: a store that does not answer keeps nothing from ending).
    // (Interruptible, though the call's runtime is captured where interruption is off.)
    const fiber = Runtime.runFork(runtime)(Effect.interruptible(Effect.flatMap(extend(costUsd), (held) => (held ? Effect.succeed(true) : within()))))
    const done = fiber.unsafePoll()
    if (done !== null) settle(done)
    else {
      pending = fiber
      fiber.addObserver(settle)
    }
    return !refused
  }
  const release = Effect.suspend(() => {
    released = true
    const waiting = pending
    return Effect.zipRight(
      waiting === undefined ? Effect.void : Fiber.interrupt(waiting),
      Effect.suspend(() => Effect.forEach(releases, (r) => r, { discard: true }))
    )
  })
  return { reAsk, heldUsd: () => heldUsd, covers, release }
}
