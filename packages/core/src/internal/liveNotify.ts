/**
 * Notices of this process's writes to runs, for readers in other processes (`RunNotices.notify`; on PostgreSQL a
 * NOTIFY). Sent after each append to a run's log and each write of its deltas to the shared `LiveStore`, throttled per
 * run: the first write of a quiet run is told at once; while a notice of the run is in flight, or less than `SPACING_MS`
 * after one was sent, the writes that follow are told by one more notice when that time is up, not one each. A run
 * stepping faster than that costs one statement per `SPACING_MS`, not one per append, and a reader elsewhere learns
 * of a write at most `SPACING_MS` late (a notice is a hint: it reads the run). Sent from a plain call (the write's path
 * does not wait for it), in the kernel's runtime. A store whose commits are heard without a notice (SQLite:
 * `commitsHeard`) gets none; one whose appends tell their watchers themselves (PostgreSQL: `appendsTold`) gets none
 * after an append, and its delta writes are told through `notifyWatchers` (a notice only while someone watches).
 */
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import type * as RunNotices from "../RunNotices.js"

/** Tells other processes that a run was written to; a plain call that returns at once. */
export type Tell = (tenantId: string, runId: string) => void

/** Whom the kernel tells: after an append to a run's log, and after a write behind of its deltas (undefined: nobody). */
export interface Tells {
  readonly appended: Tell | undefined
  readonly written: Tell | undefined
}

/** The least time between two notices of one run. */
const SPACING_MS = 20

export const make = (notices: RunNotices.Service | undefined): Effect.Effect<Tells> =>
  Effect.map(Effect.runtime<never>(), (runtime) => {
    if (notices === undefined || notices.commitsHeard === true) return { appended: undefined, written: undefined }
    const written = throttled(Runtime.runFork(runtime), notices.notifyWatchers ?? notices.notify)
    return { appended: notices.appendsTold === true ? undefined : written, written }
  })

/** `notify`, at most once per run per `SPACING_MS` (see the module's comment). */
const throttled = (runFork: (effect: Effect.Effect<void>) => unknown, notify: (tenantId: string, runId: string) => Effect.Effect<void>): Tell => {
  // Per run told lately: whether another write came since its last notice was sent.
  const recent = new Map<string, { again: boolean }>()
  const send = (tenantId: string, runId: string, key: string): void => {
    const sentAt = Date.now()
    const next = () => {
      const entry = recent.get(key)
      if (entry?.again !== true) return void recent.delete(key)
      entry.again = false
      send(tenantId, runId, key)
    }
    runFork(Effect.ensuring(
      notify(tenantId, runId),
      Effect.sync(() => void setTimeout(next, Math.max(0, SPACING_MS - (Date.now() - sentAt))))
    ))
  }
  return (tenantId, runId) => {
    const key = `${tenantId}\u0000${runId}`
    const entry = recent.get(key)
    if (entry !== undefined) return void (entry.again = true)
    recent.set(key, { again: false })
    send(tenantId, runId, key)
  }
}
