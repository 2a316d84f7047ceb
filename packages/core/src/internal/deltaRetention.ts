/**
 * How long a run's streamed deltas are kept: while the run is live. Once it ended (completed, failed, or continued as
 * new: at the handover) they are dropped, and its logged replies are its live stream from then on.
 */
import * as Effect from "effect/Effect"
import type * as Execution from "./execution.js"

/** Forgets the run's kept deltas and wakes its readers (a failed drop leaves them for the next one: never an error). */
export const dropDeltas = (deps: Execution.Deps, tenantId: string, runId: string): Effect.Effect<void> =>
  Effect.ignore(Effect.zipRight(deps.live.store.drop(tenantId, runId), deps.live.hub.changed(tenantId, runId)))

/**
 * `dropDeltas` for a run this process created and ended in one execution, its whole log written by that execution:
 * only this process can have kept deltas of it (another process streams a run's calls only after claiming it, which
 * would have refused this execution's end), so when this process kept none there is nothing to drop, and no store
 * statement is run (at 100 runs at once on SQLite, a DELETE of nothing per run cost ~250 us of CPU, measured).
 */
export const dropOwnDeltas = (deps: Execution.Deps, tenantId: string, runId: string): Effect.Effect<void> =>
  deps.live.kept(tenantId, runId) ? dropDeltas(deps, tenantId, runId) : Effect.void
