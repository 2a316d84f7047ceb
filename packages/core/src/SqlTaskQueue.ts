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
import { SqlError } from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as ParseResult from "effect/ParseResult"
import * as PubSub from "effect/PubSub"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { type SchemaMismatch, StoreError } from "./Errors.js"
import * as Tasks from "./internal/taskQueue.js"
import * as Json from "./Json.js"
import * as SqlMigrations from "./SqlMigrations.js"
import { storeError as sqlStoreError, transactionDefects } from "./SqlErrors.js"
import {
  type ClaimVersions,
  type EnqueueRequest,
  InvalidTask,
  InvalidTaskState,
  isTerminal,
  LeaseLost,
  type ListFilter,
  Outcome,
  type Service,
  type Task,
  TaskNotFound,
  TaskQueue,
  TaskStatus
} from "./TaskQueue.js"
import { TenantContext } from "./Tenant.js"

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

// --- errors --------------------------------------------------------------------------------------------------

const storeError = (operation: string) => (error: SqlError): Effect.Effect<never, StoreError> =>
  Effect.fail(sqlStoreError(`TaskQueue.${operation}`, error))

// --- rows ----------------------------------------------------------------------------------------------------

/** What the `payload` column holds: the request as enqueued, scheduling fields included. */
const Payload = Schema.Struct({
  input: Json.Json,
  tenant: TenantContext,
  repeatIntervalSeconds: Schema.optional(Schema.Number),
  timeoutSeconds: Schema.optional(Schema.Number),
  retry: Schema.optional(Schema.Struct({ maxAttempts: Schema.Number, backoffSeconds: Schema.optional(Schema.Number) })),
  expiresAfterSeconds: Schema.optional(Schema.Number)
})
const PayloadJson = Schema.parseJson(Payload)
const OutcomeJson = Schema.parseJson(Outcome)
const ResponseJson = Schema.parseJson(Json.Json)
const decodePayload = Schema.decodeUnknownEither(PayloadJson)
const encodePayload = Schema.encodeSync(PayloadJson)
const decodeOutcome = Schema.decodeUnknownEither(OutcomeJson)
const encodeOutcome = Schema.encodeSync(OutcomeJson)
const decodeResponse = Schema.decodeUnknownEither(ResponseJson)
const isStatus = Schema.is(TaskStatus)

type Row = { readonly [column: string]: unknown }

class CorruptRow {
  constructor(readonly column: string, readonly reason: string) {}
}

const optNum = (row: Row, column: string): number | undefined => {
  const value = row[column]
  if (value === null || value === undefined) return undefined
  const n = typeof value === "number" ? value : typeof value === "bigint" || typeof value === "string" ? Number(value) : Number.NaN
  if (Number.isNaN(n)) throw new CorruptRow(column, `expected a number, found ${typeof value}`)
  return n
}
const num = (row: Row, column: string): number => {
  const n = optNum(row, column)
  if (n === undefined) throw new CorruptRow(column, "expected a number, found null")
  return n
}
const optText = (row: Row, column: string): string | undefined => {
  const value = row[column]
  if (value === null || value === undefined) return undefined
  if (typeof value !== "string") throw new CorruptRow(column, `expected text, found ${typeof value}`)
  return value
}
const text = (row: Row, column: string): string => {
  const value = optText(row, column)
  if (value === undefined) throw new CorruptRow(column, "expected text, found null")
  return value
}
const decoded = <A>(column: string, result: Either.Either<A, ParseResult.ParseError>): A => {
  if (Either.isLeft(result)) throw new CorruptRow(column, ParseResult.TreeFormatter.formatErrorSync(result.left))
  return result.right
}

const taskFromRow = (row: Row): Task => {
  const status = row.status
  if (!isStatus(status)) throw new CorruptRow("status", `unknown task status ${JSON.stringify(status)}`)
  const payload = decoded("payload", decodePayload(text(row, "payload")))
  const outcome = optText(row, "outcome")
  const response = optText(row, "response")
  const key = optText(row, "idempotency_key")
  const workerId = optText(row, "worker_id")
  const leaseExpiresAt = optNum(row, "lease_expires_at")
  const deadlineAt = optNum(row, "deadline_at")
  const version = optText(row, "version")
  const { input, tenant, ...schedule } = payload
  return {
    taskId: text(row, "task_id"),
    tenantId: text(row, "tenant_id"),
    workflow: text(row, "workflow"),
    input,
    tenant,
    status,
    runId: text(row, "run_id"),
    runAt: num(row, "run_at"),
    expiresAt: num(row, "expires_at"),
    ...schedule,
    ...(key === undefined ? {} : { idempotencyKey: key }),
    seriesId: text(row, "series_id"),
    occurrence: num(row, "occurrence"),
    attempts: num(row, "attempts"),
    ...(workerId === undefined ? {} : { workerId }),
    ...(leaseExpiresAt === undefined ? {} : { leaseExpiresAt }),
    ...(deadlineAt === undefined ? {} : { deadlineAt }),
    ...(response === undefined ? {} : { response: decoded("response", decodeResponse(response)) }),
    ...(outcome === undefined ? {} : { outcome: decoded("outcome", decodeOutcome(outcome)) }),
    ...(version === undefined ? {} : { version }),
    createdAt: num(row, "created_at"),
    updatedAt: num(row, "updated_at")
  }
}

const decodeRows = (operation: string, rows: ReadonlyArray<Row>): Effect.Effect<Array<Task>, StoreError> =>
  Effect.suspend(() => {
    const out: Array<Task> = []
    for (const row of rows) {
      try {
        out.push(taskFromRow(row))
      } catch (cause) {
        if (!(cause instanceof CorruptRow)) return Effect.die(cause)
        return Effect.fail(
          new StoreError({ operation: `TaskQueue.${operation}`, reason: `corrupt row (task ${String(row.task_id)}), column ${cause.column}: ${cause.reason}` })
        )
      }
    }
    return Effect.succeed(out)
  })

/** Every column of a task, as written. */
const rowOf = (task: Task) => ({
  task_id: task.taskId,
  tenant_id: task.tenantId,
  workflow: task.workflow,
  payload: encodePayload({
    input: task.input,
    tenant: task.tenant,
    ...(task.repeatIntervalSeconds === undefined ? {} : { repeatIntervalSeconds: task.repeatIntervalSeconds }),
    ...(task.timeoutSeconds === undefined ? {} : { timeoutSeconds: task.timeoutSeconds }),
    ...(task.retry === undefined ? {} : {
      retry: { maxAttempts: task.retry.maxAttempts, ...(task.retry.backoffSeconds === undefined ? {} : { backoffSeconds: task.retry.backoffSeconds }) }
    }),
    ...(task.expiresAfterSeconds === undefined ? {} : { expiresAfterSeconds: task.expiresAfterSeconds })
  }),
  status: task.status,
  run_id: task.runId,
  run_at: task.runAt,
  expires_at: task.expiresAt,
  idempotency_key: task.idempotencyKey ?? null,
  series_id: task.seriesId,
  occurrence: task.occurrence,
  attempts: task.attempts,
  timeout_ms: task.timeoutSeconds === undefined ? null : task.timeoutSeconds * 1000,
  worker_id: task.workerId ?? null,
  lease_expires_at: task.leaseExpiresAt ?? null,
  deadline_at: task.deadlineAt ?? null,
  response: task.response === undefined ? null : JSON.stringify(task.response),
  outcome: task.outcome === undefined ? null : encodeOutcome(task.outcome),
  version: task.version ?? null,
  created_at: task.createdAt,
  updated_at: task.updatedAt
})

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
    })
  }
}

/** Creates the table and indexes if they do not exist yet (idempotent, safe to run concurrently). */
export const migrate = (options: Options = {}): Effect.Effect<void, StoreError | SchemaMismatch, SqlClient.SqlClient> => {
  const t = tableNames(options)
  // The columns the queries use: a table changed outside Artana is refused on open, not on the first query.
  const columns = {
    [t.tasks]: ["task_id", "tenant_id", "workflow", "payload", "status", "run_id", "run_at", "expires_at", "idempotency_key", "series_id",
      "occurrence", "attempts", "timeout_ms", "worker_id", "lease_expires_at", "deadline_at", "response", "outcome", "created_at", "updated_at", "version"]
  }
  return SqlMigrations.run({ name: "task_queue", tablePrefix: options.tablePrefix, migrations: migrations(options), columns })
}

// --- the queue -----------------------------------------------------------------------------------------------

/** How a transition ends: the task's new state (and a task to insert with it), or a typed failure. */
type Step<E> = Either.Either<{ readonly task: Task; readonly insert?: Task | undefined }, E>

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
    const hub = yield* PubSub.sliding<void>(1)
    const notifyChannel = channel(options)

    /**
     * Wakes this process's workers now, and on Postgres every listener when the transaction commits. With `listen`
     * the local wake-up is left out: Postgres delivers a session's own notifications to its listener too, and one
     * change should be one wake-up.
     */
    const notify = (taskId: string) =>
      Effect.zipRight(
        sql.onDialectOrElse({ pg: () => Effect.asVoid(sql`SELECT pg_notify(${notifyChannel}, ${taskId})`), orElse: () => Effect.void }),
        options.listen === undefined ? PubSub.publish(hub, undefined) : Effect.void
      )

    const fromOthers = options.listen === undefined ? Stream.empty : options.listen(notifyChannel).pipe(
      // A listening connection that drops (a server restart) is opened again; polling covers the gap.
      Stream.retry(Schedule.exponential(Duration.millis(200)).pipe(Schedule.union(Schedule.spaced(Duration.seconds(5))))),
      Stream.catchAll(() => Stream.empty),
      Stream.as(undefined)
    )
    const wakeups: Stream.Stream<void> = Stream.merge(Stream.fromPubSub(hub), fromOthers)

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
     * a row that does not match is `onMissing`.
     */
    const transition = <E>(
      operation: string,
      taskId: string,
      owner: { readonly workerId: string } | { readonly tenantId: string },
      onMissing: () => E,
      step: (task: Task, now: number) => Step<E>,
      wakes = false
    ): Effect.Effect<Task, E | StoreError> =>
      sql.withTransaction(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
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

    const timedOut = encodeOutcome(Tasks.timedOut())

    const expire = (at?: number): Effect.Effect<number, StoreError> =>
      Effect.gen(function*() {
        const now = at ?? (yield* Clock.currentTimeMillis)
        const expired = yield* sql`UPDATE ${tasks} SET status = 'expired', updated_at = ${now} WHERE status = 'queued' AND expires_at <= ${now} RETURNING task_id`
        // A running task past its deadline whose worker is gone (lease expired): nobody will fail it but us.
        const failed = yield* sql`UPDATE ${tasks} SET status = 'failed', outcome = ${timedOut}, attempts = attempts + 1, worker_id = NULL, lease_expires_at = NULL, updated_at = ${now}
WHERE status = 'running' AND deadline_at IS NOT NULL AND deadline_at <= ${now} AND lease_expires_at <= ${now} RETURNING task_id`
        return expired.length + failed.length
      }).pipe(Effect.catchTag("SqlError", storeError("expire")), Effect.withSpan("SqlTaskQueue.expire"))

    // SQLite has one writer at a time, so the single UPDATE claims atomically; Postgres needs the row locks, and
    // SKIP LOCKED lets concurrent claimers pass over each other's rows instead of queueing behind them.
    const skipLocked = sql.onDialectOrElse({ pg: () => sql`FOR UPDATE SKIP LOCKED`, orElse: () => sql`` })

    // Versions (`ClaimRequest.versions`): a pinned task of a listed workflow only when its version is accepted, and an
    // unpinned one pinned to the claimer's start version in the same statement (as `Tasks.accepts` and `Tasks.pinned`).
    const acceptedVersions = (versions: ReadonlyArray<ClaimVersions>) =>
      versions.length === 0 ? sql`` : sql` AND (version IS NULL OR NOT ${sql.in("workflow", versions.map((v) => v.workflow))}${
        versions.reduce((acc, v) => sql`${acc} OR (workflow = ${v.workflow} AND ${sql.in("version", v.accepts)})`, sql``)
      })`
    const pinVersion = (versions: ReadonlyArray<ClaimVersions>) =>
      versions.length === 0 ? sql`` : sql`, version = COALESCE(version, CASE${
        versions.reduce((acc, v) => sql`${acc} WHEN workflow = ${v.workflow} THEN ${v.start}`, sql``)
      } END)`

    const claim: Service["claim"] = (request) =>
      Effect.gen(function*() {
        const now = request.now ?? (yield* Clock.currentTimeMillis)
        const limit = Math.max(0, Math.floor(request.limit))
        if (limit === 0) return []
        yield* expire(now)
        if (request.workflows !== undefined && request.workflows.length === 0) return []
        const only = request.workflows === undefined ? sql`` : sql`AND ${sql.in("workflow", request.workflows)}`
        const versions = request.versions ?? []
        const rows = yield* sql`UPDATE ${tasks} SET status = 'running', worker_id = ${request.workerId},
  lease_expires_at = ${now + request.leaseSeconds * 1000},
  deadline_at = COALESCE(deadline_at, ${now} + timeout_ms),
  updated_at = ${now}${pinVersion(versions)}
WHERE task_id IN (
  SELECT task_id FROM ${tasks}
  WHERE ((status = 'queued' AND run_at <= ${now} AND expires_at > ${now}) OR (status = 'running' AND lease_expires_at <= ${now})) ${only}${acceptedVersions(versions)}
  ORDER BY run_at, created_at LIMIT ${limit} ${skipLocked}
) RETURNING *`
        const claimed = yield* decodeRows("claim", rows)
        return claimed.sort((a, b) => a.runAt - b.runAt || a.createdAt - b.createdAt)
      }).pipe(Effect.catchTag("SqlError", storeError("claim")), Effect.withSpan("SqlTaskQueue.claim", { attributes: { workerId: request.workerId } }))

    const lost = (taskId: string, workerId: string) => () => new LeaseLost({ taskId, workerId })
    const notFound = (tenantId: string, taskId: string) => () => new TaskNotFound({ taskId, tenantId })

    const service: Service = {
      enqueue,
      wakeups,
      claim,
      expire,
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
      respond: (tenantId, taskId, response) =>
        transition<TaskNotFound | InvalidTaskState>("respond", taskId, { tenantId }, notFound(tenantId, taskId), (task, now) =>
          task.status === "paused"
            ? Either.right({ task: Tasks.responded(task, response, now) })
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
            : Either.right({ task: Tasks.cancelled(task, now) })),
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
