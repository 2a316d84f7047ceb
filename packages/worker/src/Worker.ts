/**
 * Workers: claim due tasks from the `TaskQueue` with leases, run each through the `Kernel` under its stable run
 * id, heartbeat while it runs, and finish it with how its run ended. A worker that dies stops heartbeating;
 * when its lease expires another worker claims the task and the kernel resumes the run from its log (its
 * `RunResumed` claim and `SequenceConflict` let only one of them write). Interrupting `run` (SIGTERM in a CLI)
 * gives every task it holds back to the queue.
 *
 * @since 0.1.0
 */
import { Json, Kernel, type Lease, TaskQueue, type Workflow } from "@artana/core"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberSet from "effect/FiberSet"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"

/** Options of `run`. */
export interface Options {
  /** The workflows this worker runs, found by the task's workflow name. Register them with the kernel too. */
  readonly workflows: ReadonlyArray<Workflow.Any>
  /** Tasks run at once. */
  readonly concurrency: number
  /** How often an idle worker looks for due tasks. Default 1 second. */
  readonly pollInterval?: Duration.DurationInput | undefined
  /** How long a claim holds without a heartbeat. Default 30 seconds. */
  readonly leaseSeconds?: number | undefined
  /** How often a running task's lease is extended. Default a third of the lease. */
  readonly heartbeatInterval?: Duration.DurationInput | undefined
  /** Names this worker in the queue and the logs. Default a random UUID. */
  readonly workerId?: string | undefined
  /**
   * The versions of runs this worker continues, besides its workflows' own (`Workflow.make({ version })`): a task's
   * run is pinned to the version of the worker that first claimed it, and only a worker that has that version takes
   * it over, so a rolling deploy never hands a run of old code to new code. Name an older version here only when this
   * code replays its runs (a change guarded by `ctx.patched`). A plain list applies to every workflow of the worker;
   * a record, per workflow name. Default: each workflow's own version only.
   *
   * @example
   * Worker.run({ workflows: [approveV3], concurrency: 4, versions: ["2"] }) // runs v3, and continues v2's runs
   */
  readonly versions?: ReadonlyArray<string> | Readonly<Record<string, ReadonlyArray<string>>> | undefined
}

/** What the worker claims, per workflow: the version it starts runs with and the versions it continues. */
export const claimVersions = (
  workflows: ReadonlyArray<Workflow.Any>,
  versions: Options["versions"]
): ReadonlyArray<TaskQueue.ClaimVersions> =>
  workflows.map((w) => {
    const extra = versions === undefined ? [] : isList(versions) ? versions : versions[w.name] ?? []
    return { workflow: w.name, start: w.version, accepts: [...new Set([w.version, ...extra])] }
  })

const isList = (versions: NonNullable<Options["versions"]>): versions is ReadonlyArray<string> => Array.isArray(versions)

/** What one execution of a task came to: an outcome to finish the task with, or the task was lost to another worker. */
type Result = { readonly _tag: "outcome"; readonly outcome: TaskQueue.Outcome } | { readonly _tag: "lost"; readonly reason: string }

const tagOf = (e: unknown): string => (Predicate.hasProperty(e, "_tag") && typeof e._tag === "string" ? e._tag : "Error")
const messageOf = (e: unknown): string =>
  Predicate.hasProperty(e, "message") && typeof e.message === "string" ? e.message : String(e)

const failed = (errorTag: string, error: string): Result => ({ _tag: "outcome", outcome: { _tag: "failed", errorTag, error } })

/** How a run ended, as a task outcome. */
const fromRunResult = (workflow: Workflow.Any, result: Kernel.RunResult<unknown>): Result => {
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
const fromCause = (cause: Cause.Cause<unknown>): Result => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    // Another execution wrote to the run first, or claimed it (a newer owner epoch fenced us), or our lease ran out
    // before a tool handler could start: another worker holds the task now, so we stop quietly.
    if (tagOf(error) === "SequenceConflict" || tagOf(error) === "OwnershipLost") return { _tag: "lost", reason: messageOf(error) }
    // A response the pause's schema refuses: nothing was written, the run still waits; so does the task.
    if (tagOf(error) === "InvalidHumanResponse" && Predicate.hasProperty(error, "ticket") && typeof error.ticket === "string") {
      return { _tag: "outcome", outcome: { _tag: "paused", ticket: error.ticket, reason: messageOf(error) } }
    }
    return failed(tagOf(error), messageOf(error))
  }
  return failed("Defect", Cause.pretty(cause))
}

/**
 * The worker's hold on one task, as the kernel sees it (`Lease`): the lease's end by this process's clock, moved on
 * by each heartbeat, and a signal aborted once the lease is lost (a heartbeat found it taken over, or it ran out
 * before a heartbeat could renew it). Tool handlers get the signal; the kernel starts no handler after it.
 */
const makeLease = (task: TaskQueue.Task) => {
  const controller = new AbortController()
  let expiresAt = task.leaseExpiresAt ?? 0
  const lease: Lease.Lease = { expiresAt: () => expiresAt, signal: controller.signal }
  return {
    lease,
    renewed: (until: number | undefined) => {
      if (until !== undefined) expiresAt = until
    },
    /** Aborts the signal when the lease has run out by `now`. */
    check: (now: number) => {
      if (now >= expiresAt && !controller.signal.aborted) {
        controller.abort(`the lease on task ${task.taskId} ran out at ${new Date(expiresAt).toISOString()} before a heartbeat renewed it`)
      }
    },
    lost: (reason: string) => controller.abort(reason)
  }
}

/**
 * Runs a worker until interrupted. On interruption, tasks it holds are released (queued again, due now), so
 * another worker picks them up and resumes their runs from the log.
 *
 * @example
 * const main = Worker.run({ workflows: [approve], concurrency: 4 }).pipe(
 *   Effect.provide(Kernel.layer({ workflows: [approve] }).pipe(Layer.provideMerge(SqliteStore.layer({ filename }))))
 * )
 */
export const run = (options: Options): Effect.Effect<never, never, Kernel.Kernel | TaskQueue.TaskQueue> =>
  Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    const queue = yield* TaskQueue.TaskQueue
    const workerId = options.workerId ?? crypto.randomUUID()
    const leaseSeconds = options.leaseSeconds ?? 30
    const pollInterval = Duration.decode(options.pollInterval ?? Duration.seconds(1))
    const heartbeatInterval = Duration.decode(options.heartbeatInterval ?? Duration.millis((leaseSeconds * 1000) / 3))
    const concurrency = Math.max(1, Math.floor(options.concurrency))
    const workflows = new Map<string, Workflow.Any>()
    for (const w of options.workflows) workflows.set(w.name, w)
    // Claims only what this worker can run: a task of another workflow waits for a worker that knows it, a task pinned
    // to another version for a worker that has it.
    const names = [...workflows.keys()]
    const versions = claimVersions([...workflows.values()], options.versions)

    /** Drives the task's run: a new or crashed run through `execute`, a paused one with its response through `resume`. */
    const execute = (task: TaskQueue.Task, lease: Lease.Lease): Effect.Effect<Result> => {
      const workflow = workflows.get(task.workflow)
      if (workflow === undefined) {
        return Effect.succeed(failed("WorkflowNotFound", `workflow "${task.workflow}" is not registered with this worker; registered: ${[...workflows.keys()].join(", ") || "(none)"}`))
      }
      const input = workflow.decodeInput(task.input)
      if (Either.isLeft(input)) return Effect.succeed(failed("InvalidInput", `the input of task ${task.taskId} does not decode: ${input.left.message}`))
      const ref = { tenantId: task.tenantId, runId: task.runId }
      const drive: Effect.Effect<Kernel.RunResult<unknown>, unknown> = task.response === undefined
        ? kernel.execute(workflow, { runId: task.runId, tenant: task.tenant, input: input.right, lease })
        : kernel.resume({ ...ref, response: task.response, lease }).pipe(
          // The response is in the log already (a worker died after writing it): continue the run without it.
          Effect.catchIf((e) => tagOf(e) === "InvalidRunState", () => kernel.resume({ ...ref, lease }))
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
    const heartbeat = (task: TaskQueue.Task, held: ReturnType<typeof makeLease>): Effect.Effect<Result> =>
      Clock.currentTimeMillis.pipe(
        Effect.tap((now) => Effect.sync(() => held.check(now))),
        Effect.zipRight(queue.heartbeat(task.taskId, workerId, leaseSeconds)),
        Effect.tap((renewed) => Effect.sync(() => held.renewed(renewed.leaseExpiresAt))),
        // A store hiccup is not a lost lease: keep beating; if it lasts, the lease expires and another worker
        // takes over, and this one learns it at its next heartbeat (or from the kernel's OwnershipLost).
        Effect.catchTag("StoreError", (e) => Effect.logWarning("heartbeat failed; retrying", e.message)),
        Effect.delay(heartbeatInterval),
        Effect.forever,
        Effect.catchTag("LeaseLost", (e): Effect.Effect<Result> => {
          held.lost(e.message)
          return Effect.succeed({ _tag: "lost", reason: e.message })
        })
      )

    /** The time left before the task's deadline, if it has one. */
    const withTimeout = (task: TaskQueue.Task, effect: Effect.Effect<Result>): Effect.Effect<Result> => {
      const deadline = task.deadlineAt
      return deadline === undefined ? effect : Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.timeoutTo(effect, {
          duration: Duration.millis(Math.max(0, deadline - now)),
          onSuccess: (result): Result => result,
          onTimeout: (): Result => ({
            _tag: "outcome",
            outcome: { _tag: "failed", errorTag: "TaskTimeout", error: `the task ran longer than its timeout of ${task.timeoutSeconds ?? 0} seconds` }
          })
        }))
    }

    const finish = (task: TaskQueue.Task, outcome: TaskQueue.Outcome) =>
      queue.finish(task.taskId, workerId, outcome).pipe(
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

    const process = (task: TaskQueue.Task): Effect.Effect<void> =>
      Effect.gen(function*() {
        yield* Effect.logInfo(task.response === undefined ? "task claimed" : "task claimed with a human response")
        const held = makeLease(task)
        const result = yield* Effect.raceFirst(withTimeout(task, execute(task, held.lease)), heartbeat(task, held))
        if (result._tag === "lost") return yield* Effect.logWarning("lost the task to another worker", result.reason)
        yield* finish(task, result.outcome)
        // A run paused at a signal wait: a signal that came while the task was still ours woke nothing; wake it now.
        if (result.outcome._tag === "paused") {
          yield* kernel.wake({ tenantId: task.tenantId, runId: task.runId }).pipe(
            Effect.catchAll((e) => Effect.logWarning("cannot check the paused run for signals", e.message))
          )
        }
      }).pipe(
        Effect.onInterrupt(() =>
          queue.release(task.taskId, workerId).pipe(
            Effect.tap(() => Effect.logInfo("task released on shutdown")),
            Effect.catchAll(() => Effect.void)
          )
        ),
        Effect.annotateLogs({ taskId: task.taskId, runId: task.runId, workflow: task.workflow, workerId }),
        Effect.withSpan("Worker.task", { attributes: { taskId: task.taskId, workflow: task.workflow } })
      )

    const fibers = yield* FiberSet.make<void, never>()
    const running = new Set<string>()
    // Set by the queue's wake-ups (an enqueue, a response, a release; on Postgres from any process) and by a task
    // of this worker ending: the idle loop polls at once instead of at its next tick.
    const wake = yield* Queue.sliding<void>(1)
    yield* Effect.forkScoped(Stream.runForEach(queue.wakeups, () => Queue.offer(wake, undefined)))

    const poll = Effect.gen(function*() {
      const free = concurrency - running.size
      if (free <= 0) return 0
      const tasks = yield* queue.claim({ workerId, limit: free, leaseSeconds, workflows: names, versions }).pipe(
        Effect.catchAll((e) => Effect.as(Effect.logError("claim failed", e.message), []))
      )
      for (const task of tasks) {
        // Our own task, its lease expired while its heartbeats failed: the claim renewed the lease for the
        // execution already under way here; a second one would race it.
        if (running.has(task.taskId)) continue
        running.add(task.taskId)
        yield* FiberSet.run(fibers, Effect.ensuring(process(task), Effect.zipRight(Effect.sync(() => running.delete(task.taskId)), Queue.offer(wake, undefined))))
      }
      return tasks.length === free ? free : 0
    })

    yield* Effect.logInfo(`worker started (concurrency ${concurrency}, lease ${leaseSeconds}s)`).pipe(Effect.annotateLogs({ workerId }))
    // A full claim means more may be due: poll again at once; otherwise wait for the next tick or a wake-up.
    const idle = Effect.race(Effect.sleep(pollInterval), Queue.take(wake))
    return yield* Effect.forever(Effect.flatMap(poll, (full) => (full > 0 ? Effect.yieldNow() : idle)))
  }).pipe(
    Effect.scoped,
    Effect.onInterrupt(() => Effect.logInfo("worker stopped; its tasks were released"))
  )
