/**
 * The task state machine, shared by the in-memory queue and the tests of the SQL one: the SQL queue does the
 * same transitions in its statements.
 */
import type * as Json from "../Json.js"
import type { ClaimVersions, EnqueueRequest, ListFilter, Outcome, Task, TaskStatus } from "../TaskQueue.js"

export const DAY_SECONDS = 24 * 60 * 60
export const DEFAULT_BACKOFF_SECONDS = 1

/** A task's first run id; a retry gets its own (a failed run stays failed in the log). */
export const runIdOf = (taskId: string, attempt = 0): string => (attempt === 0 ? `task:${taskId}` : `task:${taskId}:attempt-${attempt + 1}`)

/** The task id in a run id `runIdOf` made (or a continue-as-new successor of one), or undefined for a run that is not a task's. */
export const taskIdOf = (runId: string): string | undefined => /^task:(.+?)(?::attempt-\d+)?(?:::continued::\d+)?$/.exec(runId)?.[1]

const positive = (value: number | undefined, name: string): string | undefined =>
  value === undefined || (Number.isFinite(value) && value > 0) ? undefined : `${name} must be a positive number, got ${value}`

/** Why the queue refuses the request, or undefined. */
export const validate = (request: EnqueueRequest): string | undefined => {
  if (request.workflow.trim() === "") return "workflow must name a workflow"
  if (request.runAt !== undefined && !Number.isFinite(request.runAt)) return `runAt must be epoch milliseconds, got ${request.runAt}`
  if (request.idempotencyKey !== undefined && request.idempotencyKey === "") return "idempotencyKey must not be empty"
  if (request.retry !== undefined && (!Number.isInteger(request.retry.maxAttempts) || request.retry.maxAttempts < 1)) {
    return `retry.maxAttempts must be an integer of at least 1, got ${request.retry.maxAttempts}`
  }
  return positive(request.repeatIntervalSeconds, "repeatIntervalSeconds") ??
    positive(request.timeoutSeconds, "timeoutSeconds") ??
    positive(request.expiresAfterSeconds, "expiresAfterSeconds") ??
    positive(request.retry?.backoffSeconds, "retry.backoffSeconds")
}

/** What a queued task looks like when it is enqueued. Expiry counts from when the task is due. */
export const newTask = (request: EnqueueRequest, taskId: string, now: number): Task => {
  const runAt = request.runAt ?? now
  return {
    taskId,
    tenantId: request.tenant.tenantId,
    workflow: request.workflow,
    input: request.input,
    tenant: request.tenant,
    status: "queued",
    runId: runIdOf(taskId),
    runAt,
    expiresAt: runAt + (request.expiresAfterSeconds ?? DAY_SECONDS) * 1000,
    ...(request.repeatIntervalSeconds === undefined ? {} : { repeatIntervalSeconds: request.repeatIntervalSeconds }),
    ...(request.idempotencyKey === undefined ? {} : { idempotencyKey: request.idempotencyKey }),
    ...(request.timeoutSeconds === undefined ? {} : { timeoutSeconds: request.timeoutSeconds }),
    ...(request.retry === undefined ? {} : { retry: request.retry }),
    ...(request.expiresAfterSeconds === undefined ? {} : { expiresAfterSeconds: request.expiresAfterSeconds }),
    seriesId: taskId,
    occurrence: 1,
    attempts: 0,
    createdAt: now,
    updatedAt: now
  }
}

/** Due and queued, or running under an expired lease (its worker died). */
export const claimable = (task: Task, now: number): boolean =>
  (task.status === "queued" && task.runAt <= now && task.expiresAt > now) ||
  (task.status === "running" && task.leaseExpiresAt !== undefined && task.leaseExpiresAt <= now)

/** The task no longer running: no worker, no lease, no wake-up kept for its finish. */
const withoutLease = (task: Task): Task => {
  const { leaseExpiresAt: _lease, workerId: _worker, wakePending: _wake, ...rest } = task
  return rest
}

export const claimed = (task: Task, workerId: string, leaseSeconds: number, now: number): Task => ({
  ...task,
  status: "running",
  workerId,
  leaseExpiresAt: now + leaseSeconds * 1000,
  deadlineAt: task.deadlineAt ?? (task.timeoutSeconds === undefined ? undefined : now + task.timeoutSeconds * 1000),
  updatedAt: now
})

/** True when the task is stale: queued past its expiry, or abandoned (its lease expired) past its deadline. */
export const isStale = (task: Task, now: number): boolean =>
  (task.status === "queued" && task.expiresAt <= now) ||
  (task.status === "running" && task.deadlineAt !== undefined && task.deadlineAt <= now &&
    task.leaseExpiresAt !== undefined && task.leaseExpiresAt <= now)

/**
 * The stale task's next state, or undefined for a task that is not stale: a queued task past its expiry expires; an
 * abandoned one past its deadline times out as a worker's timeout does (`finished`): retried under its policy by
 * resuming its run, which did not end. A repeating task's next occurrence follows either (`nextOccurrence`).
 */
export const expired = (task: Task, now: number): Task | undefined => {
  if (!isStale(task, now)) return undefined
  return task.status === "queued" ? { ...task, status: "expired", updatedAt: now } : finished(task, timedOut(), now)
}

/** How a task that passed its deadline ends (its run was interrupted, not ended); `seconds` when the one failing it knows them. */
export const timedOut = (seconds?: number): Outcome => ({
  _tag: "failed",
  errorTag: "TaskTimeout",
  error: seconds === undefined
    ? "the task passed its deadline (timeoutSeconds, counted from its first claim) while no worker held it"
    : `the task ran longer than its timeout of ${seconds} seconds`,
  resumable: true
})

/** True when a worker restricted to `workflows` (all when undefined) may claim the task. */
export const runs = (workflows: ReadonlyArray<string> | undefined, task: Task): boolean =>
  workflows === undefined || workflows.includes(task.workflow)

/** True when a claimer with `versions` (see `ClaimRequest.versions`) may claim the task: it accepts its pinned version. */
export const accepts = (versions: ReadonlyArray<ClaimVersions> | undefined, task: Task): boolean => {
  if (task.version === undefined) return true
  const own = versions?.find((v) => v.workflow === task.workflow)
  return own === undefined || own.accepts.includes(task.version)
}

/** The claimed task pinned to the claimer's start version, when it was not pinned yet. */
export const pinned = (task: Task, versions: ReadonlyArray<ClaimVersions> | undefined): Task => {
  if (task.version !== undefined) return task
  const own = versions?.find((v) => v.workflow === task.workflow)
  return own === undefined ? task : { ...task, version: own.start }
}

export const statusOf = (outcome: Outcome): TaskStatus => {
  switch (outcome._tag) {
    case "completed":
      return "completed"
    case "failed":
      return "failed"
    case "paused":
    case "needs_reconciliation":
      return "paused"
  }
}

/** Seconds to wait before retry number `attempt` (1-based): the backoff, doubled each time. */
export const backoffMillis = (task: Task, attempt: number): number =>
  (task.retry?.backoffSeconds ?? DEFAULT_BACKOFF_SECONDS) * 1000 * 2 ** Math.max(0, attempt - 1)

/**
 * Executions in all of a task without a retry policy whose attempts fail on the store (`StoreError`: the run did not
 * end): a store that is briefly away (a failover, a full disk being cleared) is ridden out, about eight and a half
 * minutes of backoff in all, while a store error that does not pass still fails the task in the end.
 */
export const STORE_ERROR_ATTEMPTS = 10

/** Executions in all the task gets for this failure: its policy's, else `STORE_ERROR_ATTEMPTS` for a store error, else one. */
const attemptsFor = (task: Task, outcome: Outcome & { readonly _tag: "failed" }): number =>
  task.retry?.maxAttempts ?? (outcome.errorTag === "StoreError" && outcome.resumable === true ? STORE_ERROR_ATTEMPTS : 1)

/** Failures no retry can change: the run's lineage spent its budget, or a call could not be priced (fail closed). */
const FINAL = new Set(["BudgetExceeded", "BudgetUnpriced"])

/**
 * True when a failure is retried: a retry policy with attempts left (timeouts are retried too), or a store error's.
 * A budget stop never is: a retry would spend the same budget again.
 */
export const retries = (task: Task, outcome: Outcome): boolean =>
  outcome._tag === "failed" && !FINAL.has(outcome.errorTag) && task.attempts + 1 < attemptsFor(task, outcome)

export const finished = (task: Task, outcome: Outcome, now: number): Task => {
  const { response: _response, respondedBy: _respondedBy, deadlineAt: _deadline, ...rest } = withoutLease(task)
  if (retries(task, outcome)) {
    const attempts = task.attempts + 1
    // A run that did not end is resumed, never started again: its completed side effects stay done.
    const runId = outcome._tag === "failed" && outcome.resumable === true ? task.runId : runIdOf(task.taskId, attempts)
    return { ...rest, status: "queued", attempts, runId, runAt: now + backoffMillis(task, attempts), expiresAt: now + backoffMillis(task, attempts) + DAY_SECONDS * 1000, outcome, updatedAt: now }
  }
  if (outcome._tag === "paused" && task.wakePending === true) {
    // Woken while it ran (a signal came, an approval was decided, after its run paused): its run may go on now.
    return { ...rest, status: "queued", runAt: now, expiresAt: now + (task.expiresAfterSeconds ?? DAY_SECONDS) * 1000, outcome, updatedAt: now }
  }
  if (outcome._tag === "paused" && outcome.wakeAt !== undefined) {
    // A wait for a signal with a deadline: queued for the deadline (a signal may wake it sooner: `woken`).
    const runAt = Math.max(now, outcome.wakeAt)
    return { ...rest, status: "queued", runAt, expiresAt: runAt + (task.expiresAfterSeconds ?? DAY_SECONDS) * 1000, outcome, updatedAt: now }
  }
  return { ...rest, status: statusOf(outcome), attempts: outcome._tag === "failed" ? task.attempts + 1 : task.attempts, outcome, updatedAt: now }
}

/**
 * A paused task, or one queued for its signal wait's deadline, made due now (its run's signal came); a running one
 * marked so that its finish queues it if it pauses (the wake-up came while its worker still held it: `finished`);
 * else undefined.
 */
export const woken = (task: Task, now: number): Task | undefined => {
  if (task.status === "running") return { ...task, wakePending: true, updatedAt: now }
  const waiting = task.status === "paused" || (task.status === "queued" && task.outcome?._tag === "paused" && task.outcome.wakeAt !== undefined)
  if (!waiting) return undefined
  const { deadlineAt: _deadline, ...rest } = task
  const runAt = task.status === "paused" ? now : Math.min(task.runAt, now)
  return { ...rest, status: "queued", runAt, expiresAt: Math.max(task.expiresAt, now + (task.expiresAfterSeconds ?? DAY_SECONDS) * 1000), updatedAt: now }
}

/**
 * The next occurrence of a repeating task that just ended for good: due one interval after this one was; ticks
 * missed while it ran late are skipped (no catch-up burst), as cron does.
 */
export const nextRunAt = (task: Pick<Task, "runAt">, intervalSeconds: number, now: number): number => {
  const interval = intervalSeconds * 1000
  const ticks = Math.max(1, Math.ceil((now - task.runAt) / interval))
  return task.runAt + ticks * interval
}

export const nextOccurrence = (task: Task, taskId: string, now: number): Task | undefined => {
  if (task.repeatIntervalSeconds === undefined) return undefined
  // An occurrence that expired unclaimed is a missed tick: the series goes on. A cancelled one ends it.
  if (task.status !== "completed" && task.status !== "failed" && task.status !== "expired") return undefined
  // A new task with a new run: any version may start it.
  // Nor a response waiting for the ended occurrence's run (it expired before a worker took it), nor who gave it.
  const { outcome: _o, idempotencyKey: _k, version: _v, response: _r, respondedBy: _b, ...rest } = task
  const runAt = nextRunAt(task, task.repeatIntervalSeconds, now)
  return {
    ...rest,
    taskId,
    status: "queued",
    runId: runIdOf(taskId),
    runAt,
    expiresAt: runAt + (task.expiresAfterSeconds ?? DAY_SECONDS) * 1000,
    occurrence: task.occurrence + 1,
    attempts: 0,
    createdAt: now,
    updatedAt: now
  }
}

export const released = (task: Task, now: number): Task => ({ ...withoutLease(task), status: "queued", runAt: Math.min(task.runAt, now), expiresAt: Math.max(task.expiresAt, now + (task.expiresAfterSeconds ?? DAY_SECONDS) * 1000), updatedAt: now })

export const responded = (task: Task, response: Json.Json, respondedBy: string | undefined, now: number): Task => {
  const { deadlineAt: _deadline, respondedBy: _before, ...rest } = task
  return { ...rest, status: "queued", response, ...(respondedBy === undefined ? {} : { respondedBy }), runAt: now, expiresAt: now + (task.expiresAfterSeconds ?? DAY_SECONDS) * 1000, updatedAt: now }
}

export const cancelled = (task: Task, now: number): Task => ({ ...withoutLease(task), status: "cancelled", updatedAt: now })

export const matches = (task: Task, filter: ListFilter): boolean =>
  (filter.status === undefined || task.status === filter.status) &&
  (filter.workflow === undefined || task.workflow === filter.workflow) &&
  (filter.seriesId === undefined || task.seriesId === filter.seriesId)
