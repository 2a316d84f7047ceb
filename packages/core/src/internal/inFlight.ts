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
