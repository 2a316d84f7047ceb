/** How one execution of a task ends its task: from the run's result, or from why it did not end normally. */
import { Json, type Kernel, type TaskQueue, type Workflow } from "@artana/core"
import * as Cause from "effect/Cause"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"

/**
 * What one execution of a task came to: an outcome to finish the task with, or the task was lost to another worker:
 * the queue says so (`by: "queue"`, a heartbeat's `LeaseLost`), or the run's log does (`by: "run"`: another writer
 * appended first, or a newer owner claimed the run) while the queue may still name this worker.
 */
export type Result =
  | { readonly _tag: "outcome"; readonly outcome: TaskQueue.Outcome }
  | { readonly _tag: "lost"; readonly by: "queue" | "run"; readonly reason: string }

export const tagOf = (e: unknown): string => (Predicate.hasProperty(e, "_tag") && typeof e._tag === "string" ? e._tag : "Error")
const messageOf = (e: unknown): string =>
  Predicate.hasProperty(e, "message") && typeof e.message === "string" ? e.message : String(e)

export const failed = (errorTag: string, error: string): Result => ({ _tag: "outcome", outcome: { _tag: "failed", errorTag, error } })

/** How a run ended, as a task outcome. */
export const fromRunResult = (workflow: Workflow.Any, result: Kernel.RunResult<unknown>): Result => {
  switch (result.status) {
    case "completed": {
      const encoded = workflow.encodeOutput(result.output)
      const json = Either.isRight(encoded) ? Json.fromUnknown(encoded.right) : undefined
      if (json === undefined || !json.ok) return failed("InvalidInput", `the output of run ${result.runId} does not encode to JSON`)
      return { _tag: "outcome", outcome: { _tag: "completed", output: json.json } }
    }
    case "paused":
      // A wait for a signal until a deadline: the queue holds the task for that time (`TaskQueue.Outcome`).
      return {
        _tag: "outcome",
        outcome: { _tag: "paused", ticket: result.ticket, reason: result.reason, ...(result.wakeAt === undefined ? {} : { wakeAt: result.wakeAt }) }
      }
    case "needs_reconciliation":
      return {
        _tag: "outcome",
        outcome: {
          _tag: "needs_reconciliation",
          stepKey: result.stepKey,
          tool: result.tool,
          ...(result.waitingOn === undefined ? {} : { waitingOn: result.waitingOn })
        }
      }
  }
}

/** How a run that did not end normally ends its task. Interruption is not handled here: it propagates. */
export const fromCause = (cause: Cause.Cause<unknown>): Result => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    // Another execution wrote to the run first, or claimed it (a newer owner epoch fenced us), or our lease ran out
    // before a tool handler could start: another worker holds the task now, so we stop quietly.
    if (tagOf(error) === "SequenceConflict" || tagOf(error) === "OwnershipLost") return { _tag: "lost", by: "run", reason: messageOf(error) }
    // A response the pause's schema refuses: nothing was written, the run still waits; so does the task.
    if (tagOf(error) === "InvalidHumanResponse" && Predicate.hasProperty(error, "ticket") && typeof error.ticket === "string") {
      return { _tag: "outcome", outcome: { _tag: "paused", ticket: error.ticket, reason: messageOf(error) } }
    }
    // The store failed the kernel (nothing written; the run did not end and can be resumed): a retry resumes it.
    if (tagOf(error) === "StoreError") return { _tag: "outcome", outcome: { _tag: "failed", errorTag: "StoreError", error: messageOf(error), resumable: true } }
    return failed(tagOf(error), messageOf(error))
  }
  return failed("Defect", Cause.pretty(cause))
}
