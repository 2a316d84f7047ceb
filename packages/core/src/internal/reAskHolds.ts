/**
 * A call's estimate is held for one attempt. An adapter that refuses a reply (a malformed tool call) and asks again is
 * billed for every attempt, so each re-ask first holds what the call may cost with it: everything billed so far and
 * one more attempt's estimate, beyond what is held already. Refused (the lineage has no room), the reply is not asked
 * for again (`retrying.ts`'s `billedRetry`): the call fails with the model's error, within the budget.
 */
import * as Effect from "effect/Effect"
import type { Usage } from "../Chat.js"
import { costOf, type Price } from "../Pricing.js"
import type { Held } from "./inFlight.js"
import type { StepEnv } from "./stepEnv.js"

export interface ReAsks {
  /** Whether another attempt may be made, after attempts that billed `billed`: held first when it needs more room. */
  readonly reAsk: (billed: Usage) => Effect.Effect<boolean>
  /** Releases the call's hold and every re-ask's. */
  readonly release: Effect.Effect<void>
}

export const make = (env: StepEnv, key: string, price: Price, estimateUsd: number, first: Held): ReAsks => {
  const releases: Array<Effect.Effect<void>> = [first.release]
  let heldUsd = estimateUsd
  const more = (needUsd: number): Effect.Effect<boolean> =>
    Effect.suspend(() => {
      if (!(needUsd > 0)) return Effect.succeed(true)
      if (!Number.isFinite(needUsd)) return Effect.succeed(false)
      // The lineage's spend read again: a sibling that ended since the call's hold (its hold released) spent its room.
      const spent = env.options.lineageSpend === undefined
        ? Effect.succeed(env.spentUsd())
        : Effect.map(env.options.lineageSpend, (lineage) => Math.max(env.spentUsd(), lineage))
      const ask = Effect.flatMap(spent, (spentUsd) => env.deps.budgetHolds.hold({
        tenantId: env.tenant.tenantId,
        rootRunId: env.options.rootRunId,
        runId: env.runId,
        // A hold of its own: the call's key would replace the call's hold.
        stepKey: `${key}#re-ask:${releases.length}`,
        usd: needUsd,
        limitUsd: env.tenant.budgetUsdLimit,
        spentUsd
      }))
      // A hold the store could not take is no room (fail closed).
      return Effect.match(ask, {
        onFailure: () => false,
        onSuccess: (held) => {
          if (!("release" in held)) return false
          releases.push(held.release)
          heldUsd += needUsd
          return true
        }
      })
    })
  const reAsk = (billed: Usage): Effect.Effect<boolean> =>
    Effect.suspend(() => more((costOf(billed, price) ?? Number.POSITIVE_INFINITY) + estimateUsd - heldUsd))
  return { reAsk, release: Effect.suspend(() => Effect.forEach(releases, (release) => release, { discard: true })) }
}
