/**
 * Schema migrations for the SQL stores (`SqlEventStore`, `SqlTaskQueue`, and the stores of other packages, such
 * as the agent's memory): one runner, safe when many processes open one fresh database at once, and cheap when
 * they open a migrated one.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schedule from "effect/Schedule"
import { StoreError } from "./Errors.js"

/** One migration: idempotent statements (`CREATE ... IF NOT EXISTS`), run on the `SqlClient` in context. */
export type Migration = Effect.Effect<void, SqlError, SqlClient.SqlClient>

export interface Options {
  /**
   * Names the set of migrations (`"event_store"`, `"task_queue"`, `"memory"`): the Postgres ledger table is
   * `<tablePrefix><name>_migrations` and the advisory lock is keyed by it.
   */
  readonly name: string
  readonly tablePrefix?: string | undefined
  /** Keyed `<id>_<name>`, applied in the numeric order of `<id>`. A later change is a new entry. */
  readonly migrations: Readonly<Record<string, Migration>>
}

const PREFIX = /^[A-Za-z_][A-Za-z0-9_]*$|^$/

/**
 * Checks a table prefix: names are written into DDL, so it is held to what an identifier may be without quoting.
 * Throws on a bad prefix (a programming error, caught when the store is built).
 */
export const checkPrefix = (prefix: string | undefined): string => {
  const value = prefix ?? ""
  if (!PREFIX.test(value)) {
    throw new Error(`tablePrefix "${value}" must be letters, digits and underscores, starting with a letter or underscore`)
  }
  return value
}

/** The text of a driver error's cause. */
export const causeText = (cause: unknown): string =>
  Predicate.hasProperty(cause, "message") && typeof cause.message === "string" ? cause.message : String(cause)

/** A driver failure as the `StoreError` callers see, naming the operation. */
export const storeError = (operation: string, error: SqlError): StoreError =>
  new StoreError({ operation, reason: causeText(error.cause ?? error), cause: error.cause ?? error })

/**
 * `withTransaction` turns a failed COMMIT or ROLLBACK into a defect; for a store that is a driver failure like any
 * other, so it is put back in the error channel.
 */
export const transactionDefects = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
  Effect.catchSomeDefect(effect, (defect) => (defect instanceof SqlError ? Option.some(Effect.fail(defect)) : Option.none()))

/** The driver's error code (`SQLITE_BUSY`, `23505`, ...), or "". */
export const errorCode = (error: SqlError): string =>
  Predicate.hasProperty(error.cause, "code") && typeof error.cause.code === "string" ? error.cause.code : ""

const sqliteBusy = (error: SqlError): boolean => errorCode(error).startsWith("SQLITE_BUSY")

/**
 * `effect`, run again at once while it fails with an error `again` accepts, at most `times` more times. The retry
 * is built when a failure comes, not on every call as `Effect.retry`'s schedule is: for statements on a hot path.
 */
export const retryWhile = <A, E, R>(effect: Effect.Effect<A, E, R>, again: (error: E) => boolean, times: number): Effect.Effect<A, E, R> =>
  times === 0 ? effect : Effect.catchIf(effect, again, () => retryWhile(effect, again, times - 1))

const ordered = (migrations: Readonly<Record<string, Migration>>): ReadonlyArray<readonly [string, Migration]> =>
  Object.entries(migrations).sort(([a], [b]) => Number.parseInt(a, 10) - Number.parseInt(b, 10))

/**
 * Postgres: DDL takes table locks (CREATE INDEX a SHARE lock, CREATE TRIGGER a SHARE ROW EXCLUSIVE lock) that
 * conflict with writes in flight, so running it on every open stalls or deadlocks with the workers already
 * writing. So it runs once per database: a ledger table records the migrations applied; a store that finds them
 * all there takes no lock at all; one that does not takes an advisory lock (processes starting together wait for
 * each other), reads the ledger again, and applies and records what is missing, in one transaction.
 */
const runPg = (sql: SqlClient.SqlClient, options: Options): Effect.Effect<void, SqlError> => {
  const prefix = checkPrefix(options.tablePrefix)
  const ledger = `${prefix}${options.name}_migrations`
  const steps = ordered(options.migrations)
  const applied = Effect.gen(function*() {
    const [found] = yield* sql<{ readonly ledger: string | null }>`SELECT to_regclass(${`"${ledger}"`})::text AS ledger`
    if (found?.ledger === null || found?.ledger === undefined) return new Set<string>()
    const rows = yield* sql<{ readonly id: string }>`SELECT id FROM ${sql(ledger)}`
    return new Set(rows.map((row) => row.id))
  })
  const pending = (done: ReadonlySet<string>) => steps.filter(([id]) => !done.has(id))
  return Effect.gen(function*() {
    if (pending(yield* applied).length === 0) return
    yield* sql.withTransaction(Effect.gen(function*() {
      // READ COMMITTED whatever the database's default: the ledger is read again after the lock, and must show
      // what an opener that held the lock before committed (a REPEATABLE READ snapshot predates the lock).
      yield* sql`SET TRANSACTION ISOLATION LEVEL READ COMMITTED`
      yield* sql`SELECT pg_advisory_xact_lock(hashtext(${`artana:${ledger}`}))`
      yield* sql`CREATE TABLE IF NOT EXISTS ${sql(ledger)} (id TEXT PRIMARY KEY NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`
      for (const [id, migration] of pending(yield* applied)) {
        yield* migration
        yield* sql`INSERT INTO ${sql(ledger)} (id) VALUES (${id})`
      }
    }))
  }).pipe(Effect.provideService(SqlClient.SqlClient, sql))
}

/**
 * Other databases (SQLite): every migration is idempotent, so all of them run, in one transaction, each time a
 * store opens; SQLite serialises two openers on its write lock. A transaction that read the schema before another
 * process changed it fails at once with SQLITE_BUSY (WAL's snapshot rule, which skips the busy handler), so that
 * answer is retried for a while.
 */
const runOther = (sql: SqlClient.SqlClient, options: Options): Effect.Effect<void, SqlError> =>
  sql.withTransaction(Effect.all(ordered(options.migrations).map(([, migration]) => migration), { discard: true })).pipe(
    transactionDefects,
    Effect.retry({
      while: sqliteBusy,
      schedule: Schedule.exponential(Duration.millis(5), 1.5).pipe(
        Schedule.jittered,
        Schedule.union(Schedule.spaced(Duration.millis(100))),
        Schedule.upTo(Duration.seconds(30))
      )
    }),
    Effect.provideService(SqlClient.SqlClient, sql)
  )

/**
 * Applies `migrations` to the database of the `SqlClient` in context: idempotent, safe to run concurrently from
 * many processes, and lock-free on Postgres once applied. Fails with a `StoreError` naming the migration set.
 *
 * @example
 * yield* SqlMigrations.run({ name: "memory", tablePrefix: "artana_", migrations: { "1_memory": createTables } })
 */
export const run = (options: Options): Effect.Effect<void, StoreError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    yield* sql.onDialectOrElse({ pg: () => runPg(sql, options), orElse: () => runOther(sql, options) })
  }).pipe(
    transactionDefects,
    Effect.catchTag("SqlError", (error) => Effect.fail(storeError(`migrate ${options.name}`, error)))
  )
