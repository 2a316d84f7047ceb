/**
 * Workers: claim due tasks from the `TaskQueue` with leases, run each through the `Kernel` under its stable run
 * id, heartbeat while it runs, and finish it with how its run ended. A worker that dies stops heartbeating;
 * when its lease expires another worker claims the task and the kernel resumes the run from its log (its
 * `RunResumed` claim and `SequenceConflict` let only one of them write). Interrupting `run` (SIGTERM in a CLI)
 * gives every task it holds back to the queue.
 *
 * @since 0.1.0
 */
import { Kernel, TaskQueue, type Workflow } from "@artana/core"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as Task from "./internal/task.js"

/** A task this worker runs: whether the queue knows its execution ended, and when nothing of it runs any more. */
interface Running {
  settled: boolean
  readonly done: Deferred.Deferred<void>
}

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

    const setup: Task.Setup = { kernel, queue, workerId, leaseSeconds, heartbeatInterval, workflows }

    const fibers = yield* FiberSet.make<void, never>()
    // The tasks this worker runs. `settled`: the queue knows the execution ended (what follows, the wake-up of a run
    // paused at a signal wait, may still run); `done` once nothing of it runs.
    const running = new Map<string, Running>()
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
        const current = running.get(task.taskId)
        // Our own task, its lease expired while its heartbeats failed: the claim renewed the lease for the
        // execution already under way here; a second one would race it.
        if (current !== undefined && !current.settled) continue
        // Claimed again after its execution here ended (answered, woken) while that execution's last bookkeeping
        // still ran: a new claim, run once that is done. Skipped, it would stay ours, unrun, until its lease expired.
        const entry: Running = { settled: false, done: yield* Deferred.make<void>() }
        running.set(task.taskId, entry)
        const after = current === undefined ? Effect.void : Deferred.await(current.done)
        const ended = Effect.sync(() => {
          if (running.get(task.taskId) === entry) running.delete(task.taskId)
        }).pipe(Effect.zipRight(Deferred.succeed(entry.done, undefined)), Effect.zipRight(Queue.offer(wake, undefined)))
        const settled = Effect.sync(() => {
          entry.settled = true
        })
        yield* FiberSet.run(fibers, Effect.ensuring(Task.runTask(setup, task, { after, settled }), ended))
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
