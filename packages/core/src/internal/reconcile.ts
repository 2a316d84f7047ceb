/**
 * Reconciling a run in doubt: a person says what really happened to the tool call the run stopped at, and the
 * kernel logs it as the call's outcome, unless the call may still be running where it started.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Errors from "../Errors.js"
import type { Event, EventPayload, RunInfo } from "../Event.js"
import { reconciliationPath } from "../EventStore.js"
import type { ReconcileOutcome, RunRef } from "../Kernel.js"
import type { Service as TaskQueueService } from "../TaskQueue.js"
import type { Runtime } from "./runs.js"
import * as Execution from "./execution.js"
import { lastEventOf, otherTenant, verifiedEvents } from "./ledger.js"
import * as Tasks from "./taskQueue.js"

export interface ReconcileRequest extends RunRef {
  readonly outcome: ReconcileOutcome
  readonly stepKey?: string | undefined
  readonly force?: boolean | undefined
}

/** The task driving the run, if the run is a task's (its id is `TaskQueue.runIdOf` the task's). */
const findTask = (tasks: TaskQueueService, info: RunInfo) => {
  const taskId = Tasks.taskIdOf(info.runId)
  if (taskId === undefined) return Effect.succeed(undefined)
  return tasks.get(info.tenantId, taskId).pipe(
    Effect.map((task) => (task.runId === info.runId && task.tenantId === info.tenantId ? task : undefined)),
    Effect.catchTag("TaskNotFound", () => Effect.succeed(undefined))
  )
}

/**
 * Fails with `StepMayBeRunning` while the call in doubt at `stepKey` may still be running where it started: a
 * worker holds the run's task under a live lease, or the tool's timeout has not passed since its request. A tool
 * with no timeout, or one this kernel does not know, gives no bound: only the lease is checked for it.
 */
const mayBeRunning = (runtime: Runtime, queue: Option.Option<TaskQueueService>, info: RunInfo, requested: Event | undefined, stepKey: string, tool: string) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const refuse = (reason: string, until: number) => new Errors.StepMayBeRunning({ runId: info.runId, stepKey, tool, reason, until })
    if (Option.isSome(queue)) {
      const task = yield* findTask(queue.value, info)
      if (task !== undefined && task.status === "running" && task.leaseExpiresAt !== undefined && task.leaseExpiresAt > now) {
        return yield* refuse(`worker ${task.workerId ?? "?"} holds its task ${task.taskId} under a lease until ${new Date(task.leaseExpiresAt).toISOString()}`, task.leaseExpiresAt)
      }
    }
    const timeout = runtime.deps.tools.get(tool)?.timeout
    if (requested !== undefined && timeout !== undefined) {
      const until = requested.timestamp + Duration.toMillis(timeout)
      if (now < until) {
        return yield* refuse(`it was requested at ${new Date(requested.timestamp).toISOString()} and its timeout (${Duration.format(timeout)}) has not passed`, until)
      }
    }
  })

/** Settles the run's in-doubt tool call with the outcome a person gives (see `Kernel.Service.reconcile`). */
export const reconcile = (runtime: Runtime, queue: Option.Option<TaskQueueService>, run: ReconcileRequest) =>
  Effect.gen(function*() {
    const { deps } = runtime
    const info = yield* deps.store.getRun(run.tenantId, run.runId)
    if (info.status !== "needs_reconciliation") {
      return yield* new Errors.InvalidRunState({ runId: run.runId, status: info.status, expected: "needs_reconciliation" })
    }
    const required = yield* lastEventOf(deps.store, deps.auditKey, info, "ReconciliationRequired")
    // The whole log, verified a page at a time before anything is written: its RunStarted, and the request in doubt.
    const found = yield* Stream.runFold(
      verifiedEvents(deps.store, deps.auditKey, info),
      {},
      (acc: { started?: Event; requested?: Event }, e) => {
        if (e.seq === 1) acc.started = e
        if (acc.requested === undefined && e.stepKey === required?.event.stepKey && e.payload._tag === "ToolRequested") acc.requested = e
        return acc
      }
    )
    const started = found.started?.payload
    if (required === undefined || started?._tag !== "RunStarted") {
      return yield* new Errors.StoreError({ operation: "reconcile", reason: "the log has no ReconciliationRequired event" })
    }
    const stranger = otherTenant(info, found.started!)
    if (stranger !== undefined) return yield* stranger
    const awaited = required.payload.waitingOn?.[0]
    if (awaited !== undefined) {
      // Not in doubt itself: its step waits on another run. The step in doubt is settled there, never here.
      const path = yield* reconciliationPath(deps.store, run.tenantId, run.runId)
      const last = path[path.length - 1]
      const waiting = `waiting at step ${required.event.stepKey} on run ${awaited.runId}`
      return yield* new Errors.InvalidRunState(
        last === undefined
          ? { runId: run.runId, status: `${waiting}, settled since`, expected: `in doubt itself (resume it: its step runs again)` }
          : {
            runId: run.runId,
            status: `${waiting}, whose lineage is in doubt at step ${last.stepKey} (tool ${last.tool}) of run ${last.runId}`,
            expected: `in doubt itself: reconcile run ${last.runId} at step ${last.stepKey}, then resume run ${run.runId}`
          }
      )
    }
    if (run.stepKey !== undefined && run.stepKey !== required.event.stepKey) {
      return yield* new Errors.InvalidRunState({
        runId: run.runId,
        status: `in doubt at step ${required.event.stepKey}`,
        expected: `in doubt at step ${run.stepKey}`
      })
    }
    if (run.force !== true) yield* mayBeRunning(runtime, queue, info, found.requested, required.event.stepKey, required.payload.tool)
    // Written as the run's current owner, without claiming it: an execution that claims it meanwhile wins.
    const exec = Execution.make(deps, { runId: run.runId, rootRunId: info.rootRunId, tenant: started.tenant, head: { seq: info.headSeq, hash: info.headHash }, mode: "live", spentUsd: 0, ownerEpoch: info.ownerEpoch })
    const tool = required.payload.tool
    const payload: EventPayload = run.outcome.ok
      ? { _tag: "ToolCompleted", tool, result: run.outcome.result, reconciled: true }
      : { _tag: "ToolFailed", tool, kind: "tool_error", error: run.outcome.error, reconciled: true }
    yield* exec.appendOrFail(required.event.stepKey, [payload])
  })
