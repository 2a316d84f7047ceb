/**
 * Where a model call's estimate is held against its lineage's budget while the call is in flight: in the kernel's
 * memory (`inMemory`), or in the store (`shared`, over `BudgetHolds`), where every process sees every other's.
 */
import * as Effect from "effect/Effect"
import type * as BudgetHolds from "../BudgetHolds.js"
import type { StoreError } from "../Errors.js"

/**
 * The estimates of the model calls in flight in one kernel, by lineage (tenant and root run). A call's pre-call check
 * counts the estimates of its lineage's other calls in flight with the spend: sub-runs started together (an agent's
 * parallel sub-agents) would otherwise each see the whole remainder of the budget and together spend past it. Calls
 * in other processes are not seen (their spend is, once logged: the spend is read again before every call).
 */
export interface InFlight {
  /** What the lineage's calls in flight may cost at most, together. */
  readonly of: (tenantId: string, rootRunId: string) => number
  /** Holds `usd` for the lineage until the returned release is called (once; later calls do nothing). */
  readonly hold: (tenantId: string, rootRunId: string, usd: number) => () => void
}

export const make = (): InFlight => {
  // Each hold its own entry, summed when asked: no sum kept by adding and subtracting floats.
  const held = new Map<string, Set<{ readonly usd: number }>>()
  const keyOf = (tenantId: string, rootRunId: string) => `${tenantId}\u0000${rootRunId}`
  return {
    of: (tenantId, rootRunId) => {
      let sum = 0
      for (const h of held.get(keyOf(tenantId, rootRunId)) ?? []) sum += h.usd
      return sum
    },
    hold: (tenantId, rootRunId, usd) => {
      const key = keyOf(tenantId, rootRunId)
      const entry = { usd }
      const set = held.get(key) ?? new Set()
      set.add(entry)
      held.set(key, set)
      return () => {
        if (!set.delete(entry)) return
        if (set.size === 0 && held.get(key) === set) held.delete(key)
      }
    }
  }
}

/**
 * An estimate held for a call in flight: `release` ends the hold (once the call's cost is logged, or it failed);
 * `baseUsd`, the lineage's spend and its other calls' holds when it was taken: a stream past its estimate is stopped
 * once `baseUsd` and its cost would pass the limit, summed in the order the hold's own check sums them
 * (`overBudgetOf`), so a reply at its estimate is never stopped by a rounding.
 */
export interface Held {
  readonly release: Effect.Effect<void>
  readonly baseUsd: number
}

/** A hold refused: what the lineage had spent, and held for its calls in flight, when it was asked. */
export interface Over {
  readonly spentUsd: number
  readonly heldUsd: number
}

/** A call's hold to take: `usd` for its lineage, when its spend (`spentUsd`, as the execution knows it), holds and `usd` fit in `limitUsd`. */
export interface HoldRequest {
  readonly tenantId: string
  readonly rootRunId: string
  /** The call's run and step key: its hold's identity (a call made again replaces its own earlier hold). */
  readonly runId: string
  readonly stepKey: string
  readonly usd: number
  readonly limitUsd: number
  readonly spentUsd: number
}

/** Where a model call's estimate is held against its lineage's budget (see `BudgetHolds`). */
export interface Holder {
  /**
   * True when a hold lapses on its own (the store's): its request may then be interrupted, since a hold taken by a
   * request interrupted before its release was registered only lasts until it lapses. An in-memory hold never lapses.
   */
  readonly lapses: boolean
  readonly hold: (request: HoldRequest) => Effect.Effect<Held | Over, StoreError>
}

/** Holds in this kernel's memory (`make`): its own calls see each other's, other processes' are not seen. */
export const inMemory = (inFlight: InFlight): Holder => ({
  lapses: false,
  hold: (r) =>
    Effect.sync(() => {
      const heldUsd = inFlight.of(r.tenantId, r.rootRunId)
      if (!(r.spentUsd + heldUsd + r.usd <= r.limitUsd)) return { spentUsd: r.spentUsd, heldUsd }
      const release = inFlight.hold(r.tenantId, r.rootRunId, r.usd)
      return { release: Effect.sync(release), baseUsd: r.spentUsd + heldUsd }
    })
})

/**
 * Holds in the store (`BudgetHolds`), seen by every process on it, each lapsing `ttlMillis` after it was taken unless
 * released first (a process that died holds nothing for longer). A hold is for its call (its run and step key): the
 * same call made again replaces it; each hold is released by its own id, so a replaced one's release takes nothing of
 * the new one. A request interrupted releases what it may have taken. A call the execution's own view of the spend
 * refuses asks the store nothing.
 */
export const shared = (holds: BudgetHolds.Service, ttlMillis: number): Holder => ({
  lapses: true,
  hold: (r) =>
    Effect.suspend((): Effect.Effect<Held | Over, StoreError> => {
      if (!(r.spentUsd + r.usd <= r.limitUsd)) return Effect.succeed({ spentUsd: r.spentUsd, heldUsd: 0 })
      const holdId = crypto.randomUUID()
      const callId = JSON.stringify([r.runId, r.stepKey])
      const release = Effect.catchAll(holds.release(r.tenantId, holdId), (e) =>
        Effect.logWarning(`the budget hold of model call ${r.stepKey} of run ${r.runId} was not released; it lapses on its own`, e.message))
      return Effect.clockWith((clock) => {
        const now = clock.unsafeCurrentTimeMillis()
        return holds.hold({ tenantId: r.tenantId, rootRunId: r.rootRunId, holdId, callId, usd: r.usd, limitUsd: r.limitUsd, now, expiresAt: now + ttlMillis }).pipe(
          Effect.map((result): Held | Over => {
            const spentUsd = Math.max(r.spentUsd, result.spentUsd)
            return result.held ? { release, baseUsd: spentUsd + result.heldUsd } : { spentUsd, heldUsd: result.heldUsd }
          }),
          // Interrupted while the store took it (a COMMIT in flight): it may be held, with no release registered yet.
          Effect.onInterrupt(() => release)
        )
      })
    })
})
