/**
 * A continue-as-new chain read from the store: a run's successor (from its last event, `RunContinued`) and the chain's
 * last run, where `resume`, `execute` and `signal` act.
 */
import * as Effect from "effect/Effect"
import * as Errors from "../Errors.js"
import type { RunInfo } from "../Event.js"
import type * as EventStore from "../EventStore.js"

/** The run that continues a run, from its last event (`RunContinued`): one event read, whatever the run's length. */
export const successorOf = (store: EventStore.Service, info: RunInfo): Effect.Effect<string, Errors.RunNotFound | Errors.StoreError> =>
  Effect.flatMap(store.readEvents(info.tenantId, info.runId, info.headSeq, 1), ([last]) =>
    last?.payload._tag === "RunContinued"
      ? Effect.succeed(last.payload.nextRunId)
      : Effect.fail(new Errors.StoreError({ operation: "readEvents", reason: `run ${info.runId} is continued but its last event (seq ${info.headSeq}) is not RunContinued` })))

/** The last run of `info`'s chain (`info` itself unless it continued as new): where `resume` and `execute` act. */
export const chainEnd = (store: EventStore.Service, info: RunInfo): Effect.Effect<RunInfo, Errors.RunNotFound | Errors.StoreError> =>
  Effect.gen(function*() {
    let current = info
    while (current.status === "continued") {
      current = yield* store.getRun(current.tenantId, yield* successorOf(store, current))
    }
    return current
  })
