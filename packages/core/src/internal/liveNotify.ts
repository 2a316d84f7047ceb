/**
 * Notices of this process's writes to runs, for readers in other processes (`RunNotices.notify`; on PostgreSQL a
 * NOTIFY). Sent after each append to a run's log and each write of its deltas to the shared `LiveStore`, coalesced per
 * run: while one notice of a run is in flight, the writes that follow it send one more once it is done, not one each,
 * so a run that appends faster than a round trip costs one notice per round trip. Sent from a plain call (the write's
 * path does not wait for it), in the kernel's runtime. A store whose commits are heard without a notice (SQLite:
 * `commitsHeard`) gets none.
 */
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import type * as RunNotices from "../RunNotices.js"

/** Tells other processes that a run was written to; a plain call that returns at once. */
export type Tell = (tenantId: string, runId: string) => void

export const make = (notices: RunNotices.Service | undefined): Effect.Effect<Tell | undefined> =>
  Effect.map(Effect.runtime<never>(), (runtime) => {
    if (notices === undefined || notices.commitsHeard === true) return undefined
    const runFork = Runtime.runFork(runtime)
    // Per run in flight: whether another write came since its notice was sent.
    const inFlight = new Map<string, { again: boolean }>()
    const send = (tenantId: string, runId: string, key: string): void => {
      const sent = Effect.ensuring(
        notices.notify(tenantId, runId),
        Effect.sync(() => {
          const entry = inFlight.get(key)
          if (entry?.again === true) {
            entry.again = false
            send(tenantId, runId, key)
          } else inFlight.delete(key)
        })
      )
      runFork(sent)
    }
    return (tenantId, runId) => {
      const key = `${tenantId}\u0000${runId}`
      const entry = inFlight.get(key)
      if (entry !== undefined) return void (entry.again = true)
      inFlight.set(key, { again: false })
      send(tenantId, runId, key)
    }
  })
