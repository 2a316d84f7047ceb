/**
 * The SQL task queue's transitions of one task (heartbeat, finish, release, respond, wake, cancel, and the expiry of a
 * stale one): each locks the
 * task's row with its first statement (a write), applies the state machine of `taskQueue.ts` to it and writes it
 * back in the same transaction, with a repeating task's next occurrence inserted there, exactly once.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { StoreError } from "../Errors.js"
import { transactionDefects } from "../SqlErrors.js"
import { InvalidTaskState, isTerminal, LeaseLost, type Service, type Task, TaskNotFound } from "../TaskQueue.js"
import { decodeRows, rowOf, storeError } from "./sqlTaskRows.js"
import * as Tasks from "./taskQueue.js"

/** How a transition ends: the task's new state (and a task to insert with it), or a typed failure. */
type Step<E> = Either.Either<{ readonly task: Task; readonly insert?: Task | undefined }, E>

/** The task is no longer stale when its row is locked: another claimer expired it, or took it over first. */
class NotStale {
  readonly _tag = "NotStale"
}

/** The transitions of the queue on `sql`'s table `table`; `notify` wakes the workers when one makes a task claimable. */
export const make = (sql: SqlClient.SqlClient, table: string, notify: (taskId: string) => Effect.Effect<void, SqlError>) => {
  const tasks = sql(table)

  const insert = (task: Task, onConflict: "ignore" | "fail") =>
    sql`INSERT INTO ${tasks} ${sql.insert(rowOf(task))} ${onConflict === "ignore" ? sql`ON CONFLICT DO NOTHING` : sql``} RETURNING *`

  const write = (task: Task) => {
    const { task_id: _id, tenant_id: _tenant, created_at: _created, ...columns } = rowOf(task)
    return sql`UPDATE ${tasks} SET ${sql.update(columns)} WHERE task_id = ${task.taskId}`
  }

  /**
   * Locks the task's row (the first statement writes, so SQLite takes its write lock before reading), applies
   * `step` to it and writes the result, all in one transaction. `owner` restricts it to a running task held by
   * that worker, or to a task of that tenant (another tenant's task matches no row, as an id that never existed);
   * a row that does not match is `onMissing`. `at` is the time to apply `step` at; the clock's when absent.
   */
  const transition = <E>(
    operation: string,
    taskId: string,
    owner: { readonly workerId: string } | { readonly tenantId: string },
    onMissing: () => E,
    step: (task: Task, now: number) => Step<E>,
    wakes = false,
    at?: number
  ): Effect.Effect<Task, E | StoreError> =>
    sql.withTransaction(Effect.gen(function*() {
      const now = at ?? (yield* Clock.currentTimeMillis)
      const condition = "workerId" in owner
        ? sql`AND worker_id = ${owner.workerId} AND status = 'running'`
        : sql`AND tenant_id = ${owner.tenantId}`
      const rows = yield* sql`UPDATE ${tasks} SET updated_at = updated_at WHERE task_id = ${taskId} ${condition} RETURNING *`
      const [current] = yield* decodeRows(operation, rows)
      if (current === undefined) return yield* Effect.fail(onMissing())
      const next = step(current, now)
      if (Either.isLeft(next)) return yield* Effect.fail(next.left)
      yield* write(next.right.task)
      if (next.right.insert !== undefined) yield* insert(next.right.insert, "ignore")
      if (wakes) yield* notify(taskId)
      return next.right.task
    })).pipe(
      transactionDefects,
      Effect.catchAll((error) => (error instanceof SqlError ? storeError(operation)(error) : Effect.fail(error))),
      Effect.withSpan(`SqlTaskQueue.${operation}`, { attributes: { taskId } }))

  const lost = (taskId: string, workerId: string) => () => new LeaseLost({ taskId, workerId })
  const notFound = (tenantId: string, taskId: string) => () => new TaskNotFound({ taskId, tenantId })

  const transitions: Pick<Service, "heartbeat" | "finish" | "release" | "respond" | "wake" | "cancel"> = {
    heartbeat: (taskId, workerId, leaseSeconds) =>
      transition("heartbeat", taskId, { workerId }, lost(taskId, workerId), (task, now) =>
        Either.right({ task: { ...task, leaseExpiresAt: now + leaseSeconds * 1000, updatedAt: now } })),
    finish: (taskId, workerId, outcome) =>
      transition("finish", taskId, { workerId }, lost(taskId, workerId), (task, now) => {
        const finished = Tasks.finished(task, outcome, now)
        return Either.right({ task: finished, insert: Tasks.nextOccurrence(finished, crypto.randomUUID(), now) })
      }, true),
    release: (taskId, workerId) =>
      transition("release", taskId, { workerId }, lost(taskId, workerId), (task, now) => Either.right({ task: Tasks.released(task, now) }), true),
    respond: (tenantId, taskId, response, options) =>
      transition<TaskNotFound | InvalidTaskState>("respond", taskId, { tenantId }, notFound(tenantId, taskId), (task, now) =>
        task.status === "paused"
          ? Either.right({ task: Tasks.responded(task, response, options?.respondedBy, now) })
          : Either.left(new InvalidTaskState({ taskId, status: task.status, expected: "paused" })), true),
    wake: (tenantId, taskId) =>
      transition<TaskNotFound | InvalidTaskState>("wake", taskId, { tenantId }, notFound(tenantId, taskId), (task, now) => {
        const woken = Tasks.woken(task, now)
        return woken === undefined
          ? Either.left(new InvalidTaskState({ taskId, status: task.status, expected: "paused, or queued for a signal wait's deadline" }))
          : Either.right({ task: woken })
      }, true),
    cancel: (tenantId, taskId) =>
      transition<TaskNotFound | InvalidTaskState>("cancel", taskId, { tenantId }, notFound(tenantId, taskId), (task, now) =>
        isTerminal(task.status)
          ? Either.left(new InvalidTaskState({ taskId, status: task.status, expected: "queued, running or paused" }))
          : Either.right({ task: Tasks.cancelled(task, now) }))
  }

  /**
   * Retires the tenant's task `taskId` if it is stale at `now` (`Tasks.expired`: expired, or timed out and retried
   * under its policy), a repeating task's next occurrence inserted with it. False when it is not stale (any more).
   */
  const expireOne = (taskId: string, tenantId: string, now: number): Effect.Effect<boolean, StoreError> =>
    transition<NotStale>("expire", taskId, { tenantId }, () => new NotStale(), (task) => {
      const next = Tasks.expired(task, now)
      return next === undefined
        ? Either.left(new NotStale())
        : Either.right({ task: next, insert: Tasks.nextOccurrence(next, crypto.randomUUID(), now) })
    }, false, now).pipe(Effect.as(true), Effect.catchTag("NotStale", () => Effect.succeed(false)))

  return { insert, transitions, expireOne }
}
