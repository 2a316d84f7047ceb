/**
 * The `TaskQueue` port: durable tasks that workers claim with leases. A task names a workflow, its input and
 * tenant, and when to run; its run id is stable (`task:<taskId>`), so a worker that loses its lease is replaced
 * by another that resumes the run from its log (the kernel's `RunResumed` claim lets only one of them write).
 *
 * Statuses: `queued -> running -> completed | failed | paused | expired | cancelled`, moved only by the
 * execution layer (workers, `ArtanaSession`). A queued task expires after a day (`expiresAfterSeconds`).
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { StoreError } from "./Errors.js"
import { WaitingOn } from "./Event.js"
import * as Tasks from "./internal/taskQueue.js"
import * as Json from "./Json.js"
import type { TenantContext } from "./Tenant.js"

/** Where a task is in its life. */
export const TaskStatus = Schema.Literal("queued", "running", "completed", "failed", "paused", "expired", "cancelled")
export type TaskStatus = typeof TaskStatus.Type

/** Statuses a task never leaves. */
export const isTerminal = (status: TaskStatus): boolean =>
  status === "completed" || status === "failed" || status === "expired" || status === "cancelled"

/** Automatic retries of a failed task: off unless given. */
export interface RetryPolicy {
  /** Executions in all, the first one included (2 = one retry). */
  readonly maxAttempts: number
  /** Wait before a retry; doubled on each further attempt. Default 1 second. */
  readonly backoffSeconds?: number | undefined
}

/** What `enqueue` takes. The scheduling fields travel in the task's payload. */
export interface EnqueueRequest {
  /** Name of a workflow the workers know. */
  readonly workflow: string
  /** The workflow's encoded input (what its input schema encodes to). */
  readonly input: Json.Json
  readonly tenant: TenantContext
  /** Epoch milliseconds before which the task is not claimed; now when absent. */
  readonly runAt?: number | undefined
  /** Runs the workflow again every this many seconds; each occurrence is a task of its own. */
  readonly repeatIntervalSeconds?: number | undefined
  /** Enqueueing twice with one key (per tenant) returns the first task. */
  readonly idempotencyKey?: string | undefined
  /** A running task that takes longer fails. */
  readonly timeoutSeconds?: number | undefined
  readonly retry?: RetryPolicy | undefined
  /** A queued task not claimed within this many seconds expires. Default one day. */
  readonly expiresAfterSeconds?: number | undefined
}

/** A task as the queue holds it. Times are epoch milliseconds. */
export interface Task {
  readonly taskId: string
  readonly tenantId: string
  readonly workflow: string
  readonly input: Json.Json
  readonly tenant: TenantContext
  readonly status: TaskStatus
  /** The run this task drives; stable across workers, new on a retry. */
  readonly runId: string
  readonly runAt: number
  readonly expiresAt: number
  readonly repeatIntervalSeconds?: number | undefined
  readonly idempotencyKey?: string | undefined
  readonly timeoutSeconds?: number | undefined
  readonly retry?: RetryPolicy | undefined
  readonly expiresAfterSeconds?: number | undefined
  /** The first task of a repeating series (this task itself for the first occurrence). */
  readonly seriesId: string
  readonly occurrence: number
  /** Failed executions so far (a retry policy's, or a store error's: `Outcome`'s `failed`). */
  readonly attempts: number
  readonly workerId?: string | undefined
  readonly leaseExpiresAt?: number | undefined
  /** When a running task times out (set when it is first claimed). */
  readonly deadlineAt?: number | undefined
  /**
   * A wake-up (`wake`) came while the task was running: its run, paused or about to pause, may go on (a signal came,
   * an approval was decided). If its worker finishes it paused, the task is queued again at once instead, so a
   * wake-up is kept even when that worker dies before it can look for one itself. Cleared when the task stops running.
   */
  readonly wakePending?: true | undefined
  /** A human response waiting for a worker to resume the paused run with it. */
  readonly response?: Json.Json | undefined
  /** Who gave `response` (`RespondOptions.respondedBy`): the worker logs it as `HumanResponded.respondedBy`. */
  readonly respondedBy?: string | undefined
  /** How the task ended (or paused). */
  readonly outcome?: Outcome | undefined
  /**
   * The version of its workflow the task runs with: set by its first claim (the claimer's `ClaimVersions.start`), so
   * only a claimer that accepts it continues the task's run (see `ClaimRequest.versions`). Absent until claimed.
   */
  readonly version?: string | undefined
  readonly createdAt: number
  readonly updatedAt: number
}

/**
 * How an execution of a task ended, as a worker reports it to `finish`. `needs_reconciliation` (a tool call in
 * doubt) leaves the task `paused`: a person settles the call (`Kernel.reconcile`) and `respond`s to the task.
 */
export const Outcome = Schema.Union(
  Schema.TaggedStruct("completed", { output: Json.Json }),
  Schema.TaggedStruct("failed", {
    errorTag: Schema.String,
    error: Schema.String,
    /**
     * The run did not end (the task's timeout interrupted it, or a store error stopped it): a retry resumes that run,
     * its completed steps replayed, not run again, instead of starting a new one. Without it (the workflow failed: its
     * run ended `RunFailed`), a retry is a new run, `task:<taskId>:attempt-<n>`. A resumable `StoreError` is retried even
     * without a retry policy: up to ten executions in all, the default backoff doubling (about 8.5 minutes).
     */
    resumable: Schema.optional(Schema.Literal(true))
  }),
  Schema.TaggedStruct("paused", {
    ticket: Schema.String,
    reason: Schema.String,
    /**
     * The run waits for a signal until this deadline (epoch ms): the task is queued again for it (status `queued`,
     * `runAt` the deadline), so a worker resumes the run then, unless a signal wakes it first (`wake`).
     */
    wakeAt: Schema.optional(Schema.Number)
  }),
  Schema.TaggedStruct("needs_reconciliation", {
    stepKey: Schema.String,
    tool: Schema.String,
    /** When the step waits on another run in doubt (a sub-agent's child): the path down to the step to settle. */
    waitingOn: Schema.optional(Schema.Array(WaitingOn))
  })
)
export type Outcome = typeof Outcome.Type

export interface ClaimRequest {
  readonly workerId: string
  readonly limit: number
  readonly leaseSeconds: number
  /** The time to claim at; the clock's when absent. */
  readonly now?: number | undefined
  /**
   * Only tasks of these workflows (the ones the worker can run); any when absent. Workers that run different
   * workflows share one queue this way: a task waits for a worker that knows its workflow.
   */
  readonly workflows?: ReadonlyArray<string> | undefined
  /**
   * Per workflow, the versions this claimer runs (issue 19): a task pinned to a version (`Task.version`, set by its
   * first claim) is claimed only by a claimer that accepts it, and a task not pinned yet is pinned to the claimer's
   * `start` version by the claim itself. So a rolling deploy never hands a run started by old code to new code. A
   * workflow left out is claimed whatever its version (as without `versions`).
   */
  readonly versions?: ReadonlyArray<ClaimVersions> | undefined
}

/** The versions of one workflow a claimer runs (`ClaimRequest.versions`). */
export interface ClaimVersions {
  readonly workflow: string
  /** The version it starts a task's run with: a task it claims unpinned is pinned to it. */
  readonly start: string
  /** The versions of runs it continues, `start` among them. */
  readonly accepts: ReadonlyArray<string>
}

/** Filters for `list` (always within one tenant). */
/** Options of `respond`. */
export interface RespondOptions {
  /** Who responded: logged with the response (`HumanResponded.respondedBy`), as an approval logs its approver. */
  readonly respondedBy?: string | undefined
}

export interface ListFilter {
  readonly status?: TaskStatus | undefined
  readonly workflow?: string | undefined
  readonly seriesId?: string | undefined
  readonly limit?: number | undefined
}

/** No task with this id in the tenant (another tenant's task is not found either: tenancy is a key). */
export class TaskNotFound extends Schema.TaggedError<TaskNotFound>()("TaskNotFound", {
  taskId: Schema.String,
  tenantId: Schema.String
}) {
  override get message() {
    return `task ${this.taskId} not found for tenant ${this.tenantId}`
  }
}

/** The worker no longer holds the task: its lease expired and another worker took it, or it was cancelled. */
export class LeaseLost extends Schema.TaggedError<LeaseLost>()("LeaseLost", {
  taskId: Schema.String,
  workerId: Schema.String
}) {
  override get message() {
    return `worker ${this.workerId} no longer holds task ${this.taskId} (its lease expired, or the task was ` +
      `cancelled or taken over); it must stop working on it`
  }
}

/** An operation that needs the task in another status. */
export class InvalidTaskState extends Schema.TaggedError<InvalidTaskState>()("InvalidTaskState", {
  taskId: Schema.String,
  status: Schema.String,
  expected: Schema.String
}) {
  override get message() {
    return `task ${this.taskId} is ${this.status}; this operation needs it to be ${this.expected}`
  }
}

/** A request the queue refuses before writing anything. */
export class InvalidTask extends Schema.TaggedError<InvalidTask>()("InvalidTask", { reason: Schema.String }) {
  override get message() {
    return `invalid task: ${this.reason}`
  }
}

export type TaskQueueError = TaskNotFound | LeaseLost | InvalidTaskState | InvalidTask | StoreError

export interface Service {
  /** Adds a task; with an `idempotencyKey` already used by the tenant, returns that task instead. */
  readonly enqueue: (request: EnqueueRequest) => Effect.Effect<Task, InvalidTask | StoreError>
  /**
   * Claims up to `limit` due tasks: queued ones whose `runAt` has come, and running ones whose lease expired
   * (their worker died). Expires stale queued tasks and times out abandoned ones first (as `expire`).
   */
  readonly claim: (request: ClaimRequest) => Effect.Effect<ReadonlyArray<Task>, StoreError>
  /** Extends the lease; `LeaseLost` when the worker no longer holds the task. */
  readonly heartbeat: (
    taskId: string,
    workerId: string,
    leaseSeconds: number
  ) => Effect.Effect<Task, LeaseLost | StoreError>
  /**
   * Records how the execution ended. A repeating task's next occurrence is enqueued in the same transaction,
   * so it exists exactly once; a failed task with retries left goes back to `queued`.
   */
  readonly finish: (taskId: string, workerId: string, outcome: Outcome) => Effect.Effect<Task, LeaseLost | StoreError>
  /** Gives a claimed task back (graceful shutdown): queued again, due now. */
  readonly release: (taskId: string, workerId: string) => Effect.Effect<Task, LeaseLost | StoreError>
  /**
   * Stores a human response for the tenant's paused task and queues it again; the worker resumes the run with it.
   * Another tenant's task is `TaskNotFound`, as an id that never existed.
   */
  readonly respond: (
    tenantId: string,
    taskId: string,
    response: Json.Json,
    options?: RespondOptions
  ) => Effect.Effect<Task, TaskNotFound | InvalidTaskState | StoreError>
  /**
   * Queues the tenant's paused task again, due now (or makes one queued for its signal wait's deadline due now): its
   * run waits for a signal and one came (`Kernel.signal` calls it). A running task keeps the wake-up for its finish
   * (`Task.wakePending`): finished paused, it is queued at once. Any other task is `InvalidTaskState`.
   */
  readonly wake: (tenantId: string, taskId: string) => Effect.Effect<Task, TaskNotFound | InvalidTaskState | StoreError>
  /** The tenant's task; another tenant's is `TaskNotFound`, as an id that never existed. */
  readonly get: (tenantId: string, taskId: string) => Effect.Effect<Task, TaskNotFound | StoreError>
  /** The tenant's tasks, newest first. */
  readonly list: (tenantId: string, filter?: ListFilter) => Effect.Effect<ReadonlyArray<Task>, StoreError>
  /**
   * Cancels the tenant's queued, running or paused task (a running task's worker loses its lease at its next
   * heartbeat). Another tenant's task is `TaskNotFound`, as an id that never existed.
   */
  readonly cancel: (tenantId: string, taskId: string) => Effect.Effect<Task, TaskNotFound | InvalidTaskState | StoreError>
  /**
   * Expires queued tasks past `expiresAt`, and times out running tasks past their deadline whose lease expired (their
   * worker died): failed, or retried under their policy by resuming their run, as a worker's own timeout is. A
   * repeating task's next occurrence is enqueued after either, as after a finish. Returns how many tasks it changed.
   */
  readonly expire: (now?: number) => Effect.Effect<number, StoreError>
  /**
   * Emits when a task may have become claimable: enqueued, responded to, released, or queued again (a retry, a
   * repeat's next occurrence). Workers wait on it between polls, so new work starts at once. It complements
   * polling, never replaces it: a task whose `runAt` comes, or a change made by another process on a store
   * without notifications (SQLite), is seen at the next poll. On Postgres it carries every process's changes
   * (LISTEN/NOTIFY).
   */
  readonly wakeups: Stream.Stream<void>
}

/** The durable task queue. */
export class TaskQueue extends Context.Tag("@artana/core/TaskQueue")<TaskQueue, Service>() {}

/** The run id of a task's execution: stable, so another worker resumes the same run. */
export const runIdOf = Tasks.runIdOf

/** An in-memory queue, for tests and for examples that must not touch disk. */
export const makeMemory: Effect.Effect<Service> = Effect.map(PubSub.sliding<void>(1), (hub) => {
  const wake = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> => Effect.tap(effect, () => PubSub.publish(hub, undefined))
  const tasks = new Map<string, Task>()
  const byKey = new Map<string, string>()
  const ownedBy = (taskId: string, workerId: string): Task | undefined => {
    const task = tasks.get(taskId)
    return task !== undefined && task.status === "running" && task.workerId === workerId ? task : undefined
  }
  const ofTenant = (tenantId: string, taskId: string): Task | undefined => {
    const task = tasks.get(taskId)
    return task !== undefined && task.tenantId === tenantId ? task : undefined
  }
  const put = (task: Task) => {
    tasks.set(task.taskId, task)
    return task
  }
  const expireAt = (now: number) => {
    let n = 0
    for (const task of [...tasks.values()]) {
      const next = Tasks.expired(task, now)
      if (next !== undefined) {
        put(next)
        const occurrence = Tasks.nextOccurrence(next, crypto.randomUUID(), now)
        if (occurrence !== undefined) put(occurrence)
        n++
      }
    }
    return n
  }
  return {
    enqueue: (request) =>
      wake(Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const invalid = Tasks.validate(request)
        if (invalid !== undefined) return Effect.fail(new InvalidTask({ reason: invalid }))
        const key = request.idempotencyKey === undefined ? undefined : `${request.tenant.tenantId}\u0000${request.idempotencyKey}`
        const existing = key === undefined ? undefined : byKey.get(key)
        if (existing !== undefined) return Effect.succeed(tasks.get(existing)!)
        const task = put(Tasks.newTask(request, crypto.randomUUID(), now))
        if (key !== undefined) byKey.set(key, task.taskId)
        return Effect.succeed(task)
      })),
    claim: (request) =>
      Effect.map(Clock.currentTimeMillis, (clock) => {
        const now = request.now ?? clock
        expireAt(now)
        const due = [...tasks.values()]
          .filter((t) => Tasks.claimable(t, now) && Tasks.runs(request.workflows, t) && Tasks.accepts(request.versions, t))
          .sort((a, b) => a.runAt - b.runAt || a.createdAt - b.createdAt)
        return due.slice(0, Math.max(0, request.limit)).map((t) => put(Tasks.pinned(Tasks.claimed(t, request.workerId, request.leaseSeconds, now), request.versions)))
      }),
    heartbeat: (taskId, workerId, leaseSeconds) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const task = ownedBy(taskId, workerId)
        if (task === undefined) return Effect.fail(new LeaseLost({ taskId, workerId }))
        return Effect.succeed(put({ ...task, leaseExpiresAt: now + leaseSeconds * 1000, updatedAt: now }))
      }),
    finish: (taskId, workerId, outcome) =>
      wake(Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const task = ownedBy(taskId, workerId)
        if (task === undefined) return Effect.fail(new LeaseLost({ taskId, workerId }))
        const finished = put(Tasks.finished(task, outcome, now))
        const next = Tasks.nextOccurrence(finished, crypto.randomUUID(), now)
        if (next !== undefined) put(next)
        return Effect.succeed(finished)
      })),
    release: (taskId, workerId) =>
      wake(Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const task = ownedBy(taskId, workerId)
        if (task === undefined) return Effect.fail(new LeaseLost({ taskId, workerId }))
        return Effect.succeed(put(Tasks.released(task, now)))
      })),
    respond: (tenantId, taskId, response, options) =>
      wake(Effect.flatMap(Clock.currentTimeMillis, (now): Effect.Effect<Task, TaskNotFound | InvalidTaskState> => {
        const task = ofTenant(tenantId, taskId)
        if (task === undefined) return Effect.fail(new TaskNotFound({ taskId, tenantId }))
        if (task.status !== "paused") return Effect.fail(new InvalidTaskState({ taskId, status: task.status, expected: "paused" }))
        return Effect.succeed(put(Tasks.responded(task, response, options?.respondedBy, now)))
      })),
    wake: (tenantId, taskId) =>
      wake(Effect.flatMap(Clock.currentTimeMillis, (now): Effect.Effect<Task, TaskNotFound | InvalidTaskState> => {
        const task = ofTenant(tenantId, taskId)
        if (task === undefined) return Effect.fail(new TaskNotFound({ taskId, tenantId }))
        const woken = Tasks.woken(task, now)
        return woken === undefined ? Effect.fail(new InvalidTaskState({ taskId, status: task.status, expected: "paused, or queued for a signal wait's deadline" })) : Effect.succeed(put(woken))
      })),
    get: (tenantId, taskId) =>
      Effect.suspend(() => {
        const task = ofTenant(tenantId, taskId)
        return task === undefined ? Effect.fail(new TaskNotFound({ taskId, tenantId })) : Effect.succeed(task)
      }),
    list: (tenantId, filter = {}) =>
      Effect.sync(() =>
        [...tasks.values()]
          .filter((t) => t.tenantId === tenantId && Tasks.matches(t, filter))
          .sort((a, b) => b.createdAt - a.createdAt)
          .slice(0, filter.limit ?? Number.MAX_SAFE_INTEGER)
      ),
    cancel: (tenantId, taskId) =>
      Effect.flatMap(Clock.currentTimeMillis, (now): Effect.Effect<Task, TaskNotFound | InvalidTaskState> => {
        const task = ofTenant(tenantId, taskId)
        if (task === undefined) return Effect.fail(new TaskNotFound({ taskId, tenantId }))
        if (isTerminal(task.status)) {
          return Effect.fail(new InvalidTaskState({ taskId, status: task.status, expected: "queued, running or paused" }))
        }
        return Effect.succeed(put(Tasks.cancelled(task, now)))
      }),
    expire: (now) => Effect.map(Clock.currentTimeMillis, (clock) => expireAt(now ?? clock)),
    wakeups: Stream.fromPubSub(hub)
  }
})

/** In-memory `TaskQueue` layer. */
export const layerMemory: Layer.Layer<TaskQueue> = Layer.effect(TaskQueue, makeMemory)
