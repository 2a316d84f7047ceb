/**
 * Ownership (fencing) of a run by one execution. Every batch carries the execution's owner epoch, and its first one
 * claims the run: the store refuses the batches of an owner a newer execution has fenced. Between a `ToolRequested`
 * made durable and its handler's start the process may freeze; so, just before a handler starts, the caller's lease
 * is checked (by the clock, without I/O), and the handler gets the epoch (`fence`) and a signal that fires when the
 * run is lost.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Errors from "../Errors.js"
import type { Lease } from "../Lease.js"

export interface Ownership {
  /** Fires when the run is lost: a handler's `signal`. */
  readonly signal: AbortSignal
  /** Marks the run lost, with the reason. */
  readonly lose: (reason: string) => void
  /** The hold this execution passes on to the runs its handlers drive: its caller's expiry, and its own signal. */
  readonly lease: Lease
  /** `OwnershipLost` when this execution may no longer own the run (nothing may start in its name), else undefined. */
  readonly check: (tool: string) => Effect.Effect<Errors.OwnershipLost | undefined>
  /**
   * `check` as a plain call, at `now` (the clock's time; read only when the execution holds a lease, see `timed`):
   * for a caller that reads the clock in place, with the rest of its work, rather than as an effect of its own.
   */
  readonly lostAt: (tool: string, now: number) => Errors.OwnershipLost | undefined
  /** Whether `lostAt` reads its `now` (the execution holds a lease that expires); without one only the signal counts. */
  readonly timed: boolean
}

export const make = (runId: string, ownerEpoch: number, lease: Lease | undefined): Ownership => {
  const ownership = new AbortController()
  const lose = (reason: string) => ownership.abort(reason)
  if (lease !== undefined) {
    const lost = () => lose(typeof lease.signal.reason === "string" ? lease.signal.reason : "its caller lost the run")
    if (lease.signal.aborted) lost()
    else lease.signal.addEventListener("abort", lost, { once: true })
  }
  const lost = (): Errors.OwnershipLost | undefined => {
    if (!ownership.signal.aborted) return undefined
    const reason = typeof ownership.signal.reason === "string" ? ownership.signal.reason : "it lost the run"
    return new Errors.OwnershipLost({ runId, ownerEpoch, reason })
  }
  const lostAt = (tool: string, now: number): Errors.OwnershipLost | undefined => {
    if (lease !== undefined && !ownership.signal.aborted && now >= lease.expiresAt()) {
      const what = tool.startsWith("(") ? tool.slice(1, -1) : `the call to tool "${tool}" would have started`
      lose(`its lease on the run ran out at ${new Date(lease.expiresAt()).toISOString()}, ${now - lease.expiresAt()} ms before ${what} (the process was paused, or too busy to renew it)`)
    }
    return lost()
  }
  // Without a lease only the signal can say the run is lost: no clock to read (twice a tool step).
  const check = (tool: string): Effect.Effect<Errors.OwnershipLost | undefined> =>
    lease === undefined ? Effect.sync(lost) : Effect.map(Clock.currentTimeMillis, (now) => lostAt(tool, now))
  const held: Lease = { expiresAt: () => lease?.expiresAt() ?? Number.POSITIVE_INFINITY, signal: ownership.signal }
  return { signal: ownership.signal, lose, check, lostAt, timed: lease !== undefined, lease: held }
}
