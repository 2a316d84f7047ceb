/**
 * What reaches a run from outside while it waits: a signal written to its log (and the wake-up of its task), the
 * wake-up of a run paused at a signal wait, and a person's decision on a pending approval (and the tenant's inbox).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as ApprovalsIndex from "../ApprovalsIndex.js"
import type { RunRef, Service } from "../Kernel.js"
import type * as TaskQueue from "../TaskQueue.js"
import * as Approvals from "./approvals.js"
import type { Runtime } from "./runs.js"
import * as Signals from "./signals.js"

/**
 * The kernel's `signal`, `wake`, `decideApproval` and the inbox (`approvals`, `approvalsPage`), over `runtime`'s store,
 * `queue` (when it has one) and the store's index of paused runs (`approvalsIndex`, when it has one: SQL stores do).
 */
export const make = (
  runtime: Runtime,
  queue: Option.Option<TaskQueue.Service>,
  approvalsIndex: Option.Option<ApprovalsIndex.Service>
): Pick<Service, "signal" | "wake" | "decideApproval" | "approvals" | "approvalsPage"> => {
  const { deps } = runtime
  const { notices, store } = deps
  const wake = (run: RunRef) =>
    Option.match(queue, { onNone: () => Effect.succeed(false), onSome: (q) => Signals.wakeTask(store, q, run) })

  return {
    signal: (request) =>
      Signals.send(store, deps.auditKey, request).pipe(
        // A run waiting for it in another process reads its log now, not at its next poll. The run is the receipt's:
        // the one addressed, or the last of its chain.
        Effect.tap((receipt) => (notices === undefined || receipt.duplicate === true ? Effect.void : notices.notify(request.tenantId, receipt.runId))),
        // The signal is written: a failure to wake the run's task only delays the run (a worker's `wake` after it
        // paused, or a resume, picks it up), so it is logged, and the sender is not told to send it again.
        Effect.tap((receipt) =>
          Effect.catchAll(
            wake({ tenantId: request.tenantId, runId: receipt.runId }),
            (e) => Effect.logWarning(`signal written to run ${receipt.runId}, but its task was not woken`, e.message)
          )
        ),
        Effect.withSpan("Kernel.signal", { attributes: { runId: request.runId, signal: request.name } })
      ),
    wake: (run) => wake(run),
    decideApproval: (decision) =>
      Approvals.decide(runtime, decision).pipe(
        Effect.tap((decided) => Option.match(queue, { onNone: () => Effect.void, onSome: (q) => Signals.wakeDecided(q, { tenantId: decision.tenantId, runId: decided.runId }) })),
        Effect.withSpan("Kernel.decideApproval")
      ),
    approvals: (filter) => Approvals.list(runtime, approvalsIndex, filter).pipe(Effect.withSpan("Kernel.approvals")),
    approvalsPage: (filter) => Approvals.page(runtime, approvalsIndex, filter).pipe(Effect.withSpan("Kernel.approvalsPage"))
  }
}
