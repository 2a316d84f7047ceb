/**
 * The `TaskQueue` written once against `@effect/sql`'s `SqlClient`. Claiming is one statement: on SQLite an
 * `UPDATE ... RETURNING` under the database's write lock (one writer at a time, across processes too); on
 * Postgres the same statement whose inner `SELECT` takes `FOR UPDATE SKIP LOCKED`, so many workers on many
 * machines claim different tasks without waiting for each other. Every other change locks the task's row
 * with its first statement (a write), applies the same state machine as the in-memory queue, and writes the
 * row back in the same transaction: a repeating task's next occurrence is inserted there, exactly once.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Stream from "effect/Stream"
import { type SchemaMismatch, StoreError } from "./Errors.js"
import * as Claim from "./internal/sqlTaskClaim.js"
import { decodeRows, storeError } from "./internal/sqlTaskRows.js"
import * as Transitions from "./internal/sqlTaskTransitions.js"
import * as Wakeups from "./internal/sqlTaskWakeups.js"
import * as Tasks from "./internal/taskQueue.js"
import * as SqlMigrations from "./SqlMigrations.js"
import { type EnqueueRequest, InvalidTask, type ListFilter, type Service, type Task, TaskNotFound, TaskQueue } from "./TaskQueue.js"

/** Options of the SQL task queue. */
export interface Options {
  /** Prepended to the table and index names (`artana_` gives `artana_tasks`), as for `SqlEventStore`. */
  readonly tablePrefix?: string | undefined
  /**
   * Other processes' wake-ups: the payloads notified on a channel (Postgres: `PgClient.listen`, which
   * `@artana/store-postgres` passes). On Postgres the queue notifies `channel` (`artana_<prefix>tasks`) in the
   * transaction of each change that makes a task claimable. With it, `wakeups` carries what it delivers (every
   * process's changes, this one's included); without it, this process's changes.
   */
  readonly listen?: ((channel: string) => Stream.Stream<string, SqlError>) | undefined
}

/** The notification channel of a queue's table. */
export const channel = (options: Options = {}): string => `artana_${tableNames(options).tasks}`

const tableNames = (options: Options) => {
  const prefix = SqlMigrations.checkPrefix(options.tablePrefix)
  return { tasks: `${prefix}tasks`, prefix }
}

// --- migrations --------------------------------------------------------------------------------------------

/** The schema: idempotent statements (`IF NOT EXISTS`), applied by `SqlMigrations.run`. */
export const migrations = (options: Options = {}): Record<string, SqlMigrations.Migration> => {
  const t = tableNames(options)
  return {
    "1_task_queue": Effect.gen(function*() {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      const time = sql.onDialectOrElse({ pg: () => "DOUBLE PRECISION", orElse: () => "INTEGER" })
      yield* sql`CREATE TABLE IF NOT EXISTS ${sql(t.tasks)} (
  task_id TEXT PRIMARY KEY NOT NULL,
  tenant_id TEXT NOT NULL,
  workflow TEXT NOT NULL,
  payload TEXT NOT NULL,
  status TEXT NOT NULL,
  run_id TEXT NOT NULL,
  run_at ${sql.literal(time)} NOT NULL,
  expires_at ${sql.literal(time)} NOT NULL,
  idempotency_key TEXT,
  series_id TEXT NOT NULL,
  occurrence INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  timeout_ms ${sql.literal(time)},
  worker_id TEXT,
  lease_expires_at ${sql.literal(time)},
  deadline_at ${sql.literal(time)},
  response TEXT,
  outcome TEXT,
  created_at ${sql.literal(time)} NOT NULL,
  updated_at ${sql.literal(time)} NOT NULL
)`
      // NULL keys are distinct in a unique index (SQLite and Postgres alike): only keyed tasks are deduplicated.
      yield* sql`CREATE UNIQUE INDEX IF NOT EXISTS ${sql(`${t.prefix}tasks_idempotency_idx`)} ON ${sql(t.tasks)} (tenant_id, idempotency_key)`
      // One task per occurrence of a series: the guard under "a repeating task enqueues its next occurrence once".
      yield* sql`CREATE UNIQUE INDEX IF NOT EXISTS ${sql(`${t.prefix}tasks_series_idx`)} ON ${sql(t.tasks)} (series_id, occurrence)`
      yield* sql`CREATE INDEX IF NOT EXISTS ${sql(`${t.prefix}tasks_due_idx`)} ON ${sql(t.tasks)} (status, run_at)`
      yield* sql`CREATE INDEX IF NOT EXISTS ${sql(`${t.prefix}tasks_tenant_created_idx`)} ON ${sql(t.tasks)} (tenant_id, created_at)`
    }),
    // The version of its workflow a task runs with, pinned by its first claim (issue 19, `ClaimRequest.versions`).
    // Tasks from before it are unpinned: their next claim pins them.
    "2_task_version": Effect.gen(function*() {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      yield* SqlMigrations.addColumn(sql, t.tasks, "version", { pg: "TEXT", sqlite: "TEXT" })
    }),
    // A wake-up that came while the task ran (`Task.wakePending`), kept for its finish: 1, or NULL.
    "3_task_wake_pending": Effect.gen(function*() {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      yield* SqlMigrations.addColumn(sql, t.tasks, "wake_pending", { pg: "INTEGER", sqlite: "INTEGER" })
    }),
    // Who gave a task's waiting `response` (`Task.respondedBy`), or NULL.
    "4_task_responded_by": Effect.gen(function*() {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      yield* SqlMigrations.addColumn(sql, t.tasks, "responded_by", { pg: "TEXT", sqlite: "TEXT" })
    })
  }
}

/** Creates the table and indexes if they do not exist yet (idempotent, safe to run concurrently). */
export const migrate = (options: Options = {}): Effect.Effect<void, StoreError | SchemaMismatch, SqlClient.SqlClient> => {
  const t = tableNames(options)
  // The columns the queries use: a table changed outside Artana is refused on open, not on the first query.
  const columns = {
    [t.tasks]: ["task_id", "tenant_id", "workflow", "payload", "status", "run_id", "run_at", "expires_at", "idempotency_key", "series_id",
      "occurrence", "attempts", "timeout_ms", "worker_id", "lease_expires_at", "deadline_at", "response", "outcome", "created_at", "updated_at", "version",
      "wake_pending", "responded_by"]
  }
  return SqlMigrations.run({ name: "task_queue", tablePrefix: options.tablePrefix, migrations: migrations(options), columns })
}

// --- the queue -----------------------------------------------------------------------------------------------

/**
 * Builds the queue on the `SqlClient` in context, creating its table first.
 *
 * @example
 * const queue = yield* SqlTaskQueue.make({ tablePrefix: "artana_" })
 */
export const make = (options: Options = {}): Effect.Effect<Service, StoreError | SchemaMismatch, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    yield* migrate(options)
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const t = tableNames(options)
    const tasks = sql(t.tasks)
    const { notify, wakeups } = yield* Wakeups.make(sql, options, channel(options))
    const { insert, transitions, expireOne } = Transitions.make(sql, t.tasks, notify)
    const { claim, expire } = Claim.make(sql, t.tasks, expireOne)

    const byKey = (request: EnqueueRequest, key: string) =>
      Effect.flatMap(
        sql`SELECT * FROM ${tasks} WHERE tenant_id = ${request.tenant.tenantId} AND idempotency_key = ${key}`,
        (rows) => decodeRows("enqueue", rows)
      )

    const enqueue = (request: EnqueueRequest): Effect.Effect<Task, InvalidTask | StoreError> =>
      Effect.gen(function*() {
        const invalid = Tasks.validate(request)
        if (invalid !== undefined) return yield* new InvalidTask({ reason: invalid })
        const now = yield* Clock.currentTimeMillis
        const task = Tasks.newTask(request, crypto.randomUUID(), now)
        const key = request.idempotencyKey
        if (key === undefined) {
          const [created] = yield* Effect.flatMap(insert(task, "fail"), (rows) => decodeRows("enqueue", rows))
          yield* notify(task.taskId)
          return created ?? task
        }
        // The unique (tenant, key) index decides between two enqueuers racing with one key; the loser reads the winner.
        const [created] = yield* Effect.flatMap(insert(task, "ignore"), (rows) => decodeRows("enqueue", rows))
        if (created !== undefined) {
          yield* notify(task.taskId)
          return created
        }
        const [existing] = yield* byKey(request, key)
        if (existing === undefined) return yield* new StoreError({ operation: "TaskQueue.enqueue", reason: `task with idempotency key ${key} conflicted but cannot be read` })
        return existing
      }).pipe(Effect.catchTag("SqlError", storeError("enqueue")), Effect.withSpan("SqlTaskQueue.enqueue"))

    const service: Service = {
      enqueue,
      wakeups,
      claim,
      expire,
      ...transitions,
      get: (tenantId, taskId) =>
        sql`SELECT * FROM ${tasks} WHERE task_id = ${taskId} AND tenant_id = ${tenantId}`.pipe(
          Effect.flatMap((rows) => decodeRows("get", rows)),
          Effect.catchTag("SqlError", storeError("get")),
          Effect.flatMap(([task]) => (task === undefined ? Effect.fail(new TaskNotFound({ taskId, tenantId })) : Effect.succeed(task)))
        ),
      list: (tenantId: string, filter: ListFilter = {}) => {
        const where = [sql`tenant_id = ${tenantId}`]
        if (filter.status !== undefined) where.push(sql`status = ${filter.status}`)
        if (filter.workflow !== undefined) where.push(sql`workflow = ${filter.workflow}`)
        if (filter.seriesId !== undefined) where.push(sql`series_id = ${filter.seriesId}`)
        const limit = filter.limit === undefined ? sql`` : sql`LIMIT ${Math.max(0, Math.floor(filter.limit))}`
        const tieBreak = sql.onDialectOrElse({ sqlite: () => sql`rowid DESC`, orElse: () => sql`task_id DESC` })
        return sql`SELECT * FROM ${tasks} WHERE ${sql.and(where)} ORDER BY created_at DESC, ${tieBreak} ${limit}`.pipe(
          Effect.flatMap((rows) => decodeRows("list", rows)),
          Effect.catchTag("SqlError", storeError("list"))
        )
      }
    }
    return service
  })

/**
 * The `TaskQueue` on the `SqlClient` in context.
 *
 * @example
 * const TaskQueueLive = SqlTaskQueue.layer().pipe(Layer.provide(SqliteClient.layer({ filename })))
 */
export const layer = (options: Options = {}): Layer.Layer<TaskQueue, StoreError | SchemaMismatch, SqlClient.SqlClient> =>
  Layer.effect(TaskQueue, make(options))
