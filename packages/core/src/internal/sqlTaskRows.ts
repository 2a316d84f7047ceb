/**
 * Rows of the SQL task queue: a task as the columns it is written to (`rowOf`) and read back from (`decodeRows`, a
 * row that does not decode being a `StoreError` naming the task and column), and a driver failure as the queue's
 * `StoreError`.
 */
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { StoreError } from "../Errors.js"
import * as Json from "../Json.js"
import { storeError as sqlStoreError } from "../SqlErrors.js"
import { Outcome, type Task, TaskStatus } from "../TaskQueue.js"
import { TenantContext } from "../Tenant.js"

/** A driver failure of `operation` as the queue's `StoreError` (`TaskQueue.<operation>`). */
export const storeError = (operation: string) => (error: SqlError): Effect.Effect<never, StoreError> =>
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
export const encodeOutcome = Schema.encodeSync(OutcomeJson)
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
  const respondedBy = optText(row, "responded_by")
  const key = optText(row, "idempotency_key")
  const workerId = optText(row, "worker_id")
  const leaseExpiresAt = optNum(row, "lease_expires_at")
  const deadlineAt = optNum(row, "deadline_at")
  const version = optText(row, "version")
  const wakePending = optNum(row, "wake_pending") === 1
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
    ...(wakePending ? { wakePending } : {}),
    ...(response === undefined ? {} : { response: decoded("response", decodeResponse(response)) }),
    ...(respondedBy === undefined ? {} : { respondedBy }),
    ...(outcome === undefined ? {} : { outcome: decoded("outcome", decodeOutcome(outcome)) }),
    ...(version === undefined ? {} : { version }),
    createdAt: num(row, "created_at"),
    updatedAt: num(row, "updated_at")
  }
}

export const decodeRows = (operation: string, rows: ReadonlyArray<Row>): Effect.Effect<Array<Task>, StoreError> =>
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
export const rowOf = (task: Task) => ({
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
  wake_pending: task.wakePending === true ? 1 : null,
  response: task.response === undefined ? null : JSON.stringify(task.response),
  responded_by: task.respondedBy ?? null,
  outcome: task.outcome === undefined ? null : encodeOutcome(task.outcome),
  version: task.version ?? null,
  created_at: task.createdAt,
  updated_at: task.updatedAt
})
