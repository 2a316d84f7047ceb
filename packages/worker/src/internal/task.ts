/**
 * One claimed task, start to end: its run driven through the kernel (under the task's deadline), its lease extended
 * by heartbeats meanwhile, and the task finished with how the run ended; a task given up on interruption is
 * released to the queue.
 */
import { type Kernel, type Lease, TaskQueue, type Workflow } from "@artana/core"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import * as Schedule from "effect/Schedule"
import * as TaskLease from "./lease.js"
import { failed, fromCause, fromRunResult, type Result, tagOf } from "./outcome.js"

/** What the worker gives each of its tasks. */
export interface Setup {
  readonly kernel: Kernel.Service
  readonly queue: TaskQueue.Service
  readonly workerId: string
  readonly leaseSeconds: number
  readonly heartbeatInterval: Duration.Duration
  /** The worker's workflows, by name. */
  readonly workflows: ReadonlyMap<string, Workflow.Any>
}

/** Drives the task's run: a new or crashed run through `execute`, a paused one with its response through `resume`. */
const execute = (setup: Setup, task: TaskQueue.Task, lease: Lease.Lease): Effect.Effect<Result> => {
  const { kernel, workflows } = setup
  const workflow = workflows.get(task.workflow)
  if (workflow === undefined) {
    return Effect.succeed(failed("WorkflowNotFound", `workflow "${task.workflow}" is not registered with this worker; registered: ${[...workflows.keys()].join(", ") || "(none)"}`))
  }
  const input = workflow.decodeInput(task.input)
  if (Either.isLeft(input)) return Effect.succeed(failed("InvalidInput", `the input of task ${task.taskId} does not decode: ${input.left.message}`))
  const ref = { tenantId: task.tenantId, runId: task.runId }
  // A retry's run is a sub-run of the task's first run: every attempt draws on one budget (the first run's lineage),
  // so a retry policy never multiplies what a task may spend. A first attempt that never made a run (its workflow
  // unknown to that worker) leaves the retry a run of its own.
  const first = TaskQueue.runIdOf(task.taskId)
  const start = (parentRunId: string | undefined) =>
    kernel.execute(workflow, { runId: task.runId, tenant: task.tenant, input: input.right, lease, ...(parentRunId === undefined ? {} : { parentRunId }) })
  const drive: Effect.Effect<Kernel.RunResult<unknown>, unknown> = task.response === undefined
    ? task.runId === first
      ? start(undefined)
      : start(first).pipe(Effect.catchIf((e) => tagOf(e) === "RunNotFound" && Predicate.hasProperty(e, "runId") && e.runId === first, () => start(undefined)))
    // With this worker's workflow, not the kernel's registry: a worker pinned to an older version continues its runs
    // with that version's code, whatever the process's kernel registers.
    : kernel.resume({ ...ref, workflow, response: task.response, ...(task.respondedBy === undefined ? {} : { respondedBy: task.respondedBy }), lease }).pipe(
      // The response is in the log already (a worker died after writing it): continue the run without it.
      Effect.catchIf((e) => tagOf(e) === "InvalidRunState", () => kernel.resume({ ...ref, workflow, lease }))
    )
  return Effect.matchCauseEffect(drive, {
    onSuccess: (result) => Effect.succeed(fromRunResult(workflow, result)),
    onFailure: (cause) => (Cause.isInterruptedOnly(cause) ? Effect.interrupt : Effect.succeed(fromCause(cause)))
  })
}

/**
 * Extends the lease until the task ends; ends with "lost" when the queue says another worker holds it. The
 * lease's signal is aborted then, and as soon as the lease runs out unrenewed.
 */
const heartbeat = (setup: Setup, task: TaskQueue.Task, held: TaskLease.Held): Effect.Effect<Result> =>
  Clock.currentTimeMillis.pipe(
    Effect.tap((now) => Effect.sync(() => held.check(now))),
    Effect.zipRight(setup.queue.heartbeat(task.taskId, setup.workerId, setup.leaseSeconds)),
    Effect.tap((renewed) => Effect.sync(() => held.renewed(renewed.leaseExpiresAt))),
    // A store hiccup is not a lost lease: keep beating; if it lasts, the lease expires and another worker
    // takes over, and this one learns it at its next heartbeat (or from the kernel's OwnershipLost).
    Effect.catchTag("StoreError", (e) => Effect.logWarning("heartbeat failed; retrying", e.message)),
    Effect.delay(setup.heartbeatInterval),
    Effect.forever,
    Effect.catchTag("LeaseLost", (e): Effect.Effect<Result> => {
      held.lost(e.message)
      return Effect.succeed({ _tag: "lost", by: "queue", reason: e.message })
    })
  )

/** The time left before the task's deadline, if it has one. */
const withTimeout = (task: TaskQueue.Task, effect: Effect.Effect<Result>): Effect.Effect<Result> => {
  const deadline = task.deadlineAt
  return deadline === undefined ? effect : Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.timeoutTo(effect, {
      duration: Duration.millis(Math.max(0, deadline - now)),
      onSuccess: (result): Result => result,
      // The run was interrupted, not ended: a retry resumes it.
      onTimeout: (): Result => ({
        _tag: "outcome",
        outcome: {
          _tag: "failed",
          errorTag: "TaskTimeout",
          error: `the task ran longer than its timeout of ${task.timeoutSeconds ?? 0} seconds`,
          resumable: true
        }
      })
    }))
}

const finish = (setup: Setup, task: TaskQueue.Task, outcome: TaskQueue.Outcome) =>
  setup.queue.finish(task.taskId, setup.workerId, outcome).pipe(
    Effect.retry({ while: (e) => e._tag === "StoreError", schedule: Schedule.exponential("100 millis"), times: 5 }),
    Effect.tap((t) => {
      const reason = outcome._tag === "failed" ? `${outcome.errorTag}: ${outcome.error}` : ""
      if (t.status === "failed") return Effect.logError(`task failed: ${reason}`)
      if (outcome._tag === "failed") return Effect.logWarning(`attempt ${t.attempts} failed, retrying at ${new Date(t.runAt).toISOString()}: ${reason}`)
      return Effect.logInfo(`task ${t.status}`)
    }),
    Effect.catchTag("LeaseLost", (e) => Effect.logWarning("finished after losing the task", e.message)),
    Effect.catchTag("StoreError", (e) => Effect.logError("cannot record how the task ended; another worker will resume its run", e.message)),
    Effect.uninterruptible
  )

/** Releases a task this worker no longer drives; a task another worker holds already (`LeaseLost`) is left to it. */
const handBack = (setup: Setup, task: TaskQueue.Task) =>
  setup.queue.release(task.taskId, setup.workerId).pipe(
    Effect.tap(() => Effect.logInfo("task handed back to the queue")),
    Effect.catchTag("LeaseLost", () => Effect.void),
    Effect.catchTag("StoreError", (e) => Effect.logWarning("cannot hand the task back; it is claimed again when its lease expires", e.message))
  )

/** When a claimed task runs, and what hears that its execution ended. */
export interface Turn {
  /** Waited for before anything runs: the end of this worker's earlier execution of the task (default none). */
  readonly after?: Effect.Effect<void> | undefined
  /**
   * Runs once the queue knows the execution ended (its outcome recorded, or the task handed back or lost): a claim of
   * the task after that is a new one (a response, a wake-up), not this execution's lease renewed.
   */
  readonly settled?: Effect.Effect<void> | undefined
}

/** Runs a claimed task to its end; on interruption (waiting for its turn too), releases it to the queue. */
export const runTask = (setup: Setup, task: TaskQueue.Task, turn: Turn = {}): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (turn.after !== undefined) yield* turn.after
    const settled = turn.settled ?? Effect.void
    yield* Effect.logInfo(task.response === undefined ? "task claimed" : "task claimed with a human response")
    const held = TaskLease.make(task)
    const result = yield* Effect.raceFirst(withTimeout(task, execute(setup, task, held.lease)), heartbeat(setup, task, held))
    if (result._tag === "lost") {
      yield* Effect.logWarning("lost the task to another worker", result.reason)
      // The run's log said so, not the queue: if the queue still names us (a stale worker's append beat our claim, or
      // our lease ran out locally before anyone took the task), hand the task back, due now, rather than leave it
      // held by nobody until our lease expires. Its next claim resumes the run and fences any older writer.
      if (result.by === "run") yield* handBack(setup, task)
      return yield* settled
    }
    yield* finish(setup, task, result.outcome)
    yield* settled
    // A run paused at a signal wait: a signal that came while the task was still ours woke nothing; wake it now.
    if (result.outcome._tag === "paused") {
      yield* setup.kernel.wake({ tenantId: task.tenantId, runId: task.runId }).pipe(
        Effect.catchAll((e) => Effect.logWarning("cannot check the paused run for signals", e.message))
      )
    }
  }).pipe(
    Effect.onInterrupt(() =>
      setup.queue.release(task.taskId, setup.workerId).pipe(
        Effect.tap(() => Effect.logInfo("task released on shutdown")),
        Effect.catchAll(() => Effect.void)
      )
    ),
    Effect.annotateLogs({ taskId: task.taskId, runId: task.runId, workflow: task.workflow, workerId: setup.workerId }),
    Effect.withSpan("Worker.task", { attributes: { taskId: task.taskId, workflow: task.workflow } })
  )
