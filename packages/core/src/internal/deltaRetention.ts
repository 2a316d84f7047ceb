/**
 * How long a run's streamed deltas are kept: while the run is live. Once it ended (completed, failed, or continued as
 * new: at the handover) they are dropped, and its logged replies are its live stream from then on.
 */
import * as Effect from "effect/Effect"
import type * as Execution from "./execution.js"

/** Forgets the run's kept deltas and wakes its readers (a failed drop leaves them for the next one: never an error). */
export const dropDeltas = (deps: Execution.Deps, tenantId: string, runId: string): Effect.Effect<void> =>
  Effect.ignore(Effect.zipRight(deps.live.store.drop(tenantId, runId), deps.live.hub.changed(tenantId, runId)))
