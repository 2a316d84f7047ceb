/**
 * Schema migrations for the SQL stores (`SqlEventStore`, `SqlTaskQueue`, and the stores of other packages, such
 * as the agent's memory): one runner, safe when many processes open one fresh database at once, and cheap when
 * they open a migrated one. It is also the schema guard: a database written by a newer Artana (a migration this
 * code does not know, a newer SQLite `user_version`) or missing a column the store needs is refused on open with
 * `SchemaMismatch`, before anything is written; and on a read-only connection it only checks, never migrates.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import { SchemaMismatch, type StoreError } from "./Errors.js"
import { sqliteBusy, storeError, transactionDefects } from "./SqlErrors.js"

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
  /**
   * The columns the store reads and writes, by full table name: checked after migrating (or, read-only, instead
   * of it), so a table whose column was renamed or dropped fails the open with `SchemaMismatch`, not a later
   * query with `no such column`.
   */
  readonly columns?: Readonly<Record<string, ReadonlyArray<string>>> | undefined
}

/**
 * The layout version of an Artana SQLite file, kept in its header's `user_version`: 0 for a file written before
 * Artana recorded it, 1 since the migration ledgers (`<prefix><name>_migrations`, as on PostgreSQL). It changes only
 * when the file's layout changes in a way the ledgers cannot describe; a file with a higher one is refused.
 */
export const SQLITE_FILE_VERSION = 1

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

const ordered = (migrations: Readonly<Record<string, Migration>>): ReadonlyArray<readonly [string, Migration]> =>
  Object.entries(migrations).sort(([a], [b]) => versionOf(a) - versionOf(b))

/** The number a migration id starts with (`"2_postgres_head_in_statement"` is 2); 0 for none. */
const versionOf = (id: string): number => {
  const n = Number.parseInt(id, 10)
  return Number.isNaN(n) ? 0 : n
}

const highest = (ids: Iterable<string>): number => Math.max(0, ...Array.from(ids, versionOf))

const UPGRADE = "upgrade Artana (every @artana/* package, and the artana CLI) to the version that wrote this database, " +
  "or open a copy of it; this version must not write to it"

/** Refuses a ledger holding migrations this code does not know: a newer Artana wrote them. */
const checkKnown = (options: Options, applied: ReadonlySet<string>): Effect.Effect<void, SchemaMismatch> => {
  const unknown = [...applied].filter((id) => !Object.hasOwn(options.migrations, id)).sort((a, b) => versionOf(a) - versionOf(b))
  if (unknown.length === 0) return Effect.void
  return Effect.fail(new SchemaMismatch({
    schema: options.name,
    databaseVersion: highest(applied),
    codeVersion: highest(Object.keys(options.migrations)),
    reason: `the database records migration${unknown.length === 1 ? "" : "s"} ${unknown.join(", ")}, which this Artana does not know ` +
      `(a newer Artana applied ${unknown.length === 1 ? "it" : "them"}): ${UPGRADE}`
  }))
}

/** Names of the ledger of `options`' migrations, for SQL and for error messages. */
const ledgerOf = (options: Options): string => `${checkPrefix(options.tablePrefix)}${options.name}_migrations`

/** The migrations the ledger records (none when it does not exist yet). */
const readLedger = (sql: SqlClient.SqlClient, ledger: string): Effect.Effect<ReadonlySet<string>, SqlError> =>
  Effect.gen(function*() {
    const exists = yield* sql.onDialectOrElse({
      pg: () => Effect.map(sql<{ readonly ledger: string | null }>`SELECT to_regclass(${`"${ledger}"`})::text AS ledger`, ([row]) => typeof row?.ledger === "string"),
      orElse: () => Effect.map(sql<{ readonly name: string }>`SELECT name FROM sqlite_master WHERE type = 'table' AND name = ${ledger}`, (rows) => rows.length > 0)
    })
    if (!exists) return new Set<string>()
    const rows = yield* sql<{ readonly id: string }>`SELECT id FROM ${sql(ledger)}`
    return new Set(rows.map((row) => row.id))
  })

/**
 * Whether the connection may not write: SQLite's `query_only` (set by a store opened read-only), PostgreSQL's
 * `transaction_read_only` (a hot standby, a role or connection with `default_transaction_read_only`). Such a store
 * is checked and never migrated.
 */
const readOnly = (sql: SqlClient.SqlClient): Effect.Effect<boolean, SqlError> =>
  sql.onDialectOrElse({
    pg: () => Effect.map(sql<{ readonly ro: string }>`SELECT current_setting('transaction_read_only') AS ro`, ([row]) => row?.ro === "on"),
    orElse: () => Effect.map(sql.unsafe<{ readonly query_only: unknown }>("PRAGMA query_only"), ([row]) => Number(row?.query_only) === 1)
  })

/** SQLite: the file's `user_version`, refused when it is newer than this code's. */
const fileVersion = (sql: SqlClient.SqlClient): Effect.Effect<number, SqlError | SchemaMismatch> =>
  Effect.flatMap(sql.unsafe<{ readonly user_version: unknown }>("PRAGMA user_version"), ([row]) => {
    const version = Number(row?.user_version ?? 0)
    return version <= SQLITE_FILE_VERSION ? Effect.succeed(version) : Effect.fail(new SchemaMismatch({
      schema: "sqlite file",
      databaseVersion: version,
      codeVersion: SQLITE_FILE_VERSION,
      reason: `the file's user_version is ${version}, and this Artana reads files up to version ${SQLITE_FILE_VERSION}: ${UPGRADE}`
    }))
  })

/** Refuses a table that lacks a column the store uses (or does not exist), naming it. */
const checkColumns = (sql: SqlClient.SqlClient, options: Options, applied: ReadonlySet<string>): Effect.Effect<void, SqlError | SchemaMismatch> =>
  Effect.forEach(Object.entries(options.columns ?? {}), ([table, wanted]) =>
    Effect.gen(function*() {
      const rows = yield* sql.onDialectOrElse({
        pg: () => sql<{ readonly name: string }>`SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ${table}`,
        orElse: () => sql<{ readonly name: string }>`SELECT name FROM pragma_table_info(${table})`
      })
      const found = new Set(rows.map((row) => row.name))
      const missing = wanted.filter((column) => !found.has(column))
      if (missing.length === 0) return
      const codeVersion = highest(Object.keys(options.migrations))
      return yield* new SchemaMismatch({
        schema: options.name,
        databaseVersion: highest(applied),
        codeVersion,
        reason: found.size === 0
          ? `the database has no table ${table}: it is not an Artana database, or no Artana has opened it for writing yet`
          : `table ${table} has no column ${missing.join(", ")} (renamed or dropped outside Artana, or by another version): ` +
            `restore the database from a backup, or open it with the Artana that changed it`
      })
    }), { discard: true })

/**
 * Postgres: DDL takes table locks (CREATE INDEX a SHARE lock, CREATE TRIGGER a SHARE ROW EXCLUSIVE lock) that
 * conflict with writes in flight, so running it on every open stalls or deadlocks with the workers already
 * writing. So it runs once per database: a ledger table records the migrations applied; a store that finds them
 * all there takes no lock at all; one that does not takes an advisory lock (processes starting together wait for
 * each other), reads the ledger again, and applies and records what is missing, in one transaction.
 */
const runPg = (sql: SqlClient.SqlClient, options: Options, ledger: string, pending: ReadonlyArray<readonly [string, Migration]>) =>
  sql.withTransaction(Effect.gen(function*() {
    // READ COMMITTED whatever the database's default: the ledger is read again after the lock, and must show
    // what an opener that held the lock before committed (a REPEATABLE READ snapshot predates the lock).
    yield* sql`SET TRANSACTION ISOLATION LEVEL READ COMMITTED`
    yield* sql`SELECT pg_advisory_xact_lock(hashtext(${`artana:${ledger}`}))`
    yield* sql`CREATE TABLE IF NOT EXISTS ${sql(ledger)} (id TEXT PRIMARY KEY NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`
    const applied = yield* readLedger(sql, ledger)
    yield* checkKnown(options, applied)
    for (const [id, migration] of pending.filter(([id]) => !applied.has(id))) {
      yield* migration
      yield* sql`INSERT INTO ${sql(ledger)} (id) VALUES (${id})`
    }
  }))

/**
 * SQLite: the pending migrations (all of them on a file written before the ledger, each idempotent), the ledger's
 * rows and the file's `user_version`, in one transaction; SQLite serialises two openers on its write lock, and the
 * second finds the ledger complete. A transaction that read the schema before another process changed it fails at
 * once with SQLITE_BUSY (WAL's snapshot rule, which skips the busy handler), so that answer is retried for a while.
 */
const runSqlite = (sql: SqlClient.SqlClient, options: Options, ledger: string, pending: ReadonlyArray<readonly [string, Migration]>) =>
  sql.withTransaction(Effect.gen(function*() {
    yield* fileVersion(sql)
    yield* sql`CREATE TABLE IF NOT EXISTS ${sql(ledger)} (id TEXT PRIMARY KEY NOT NULL, applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)`
    const applied = yield* readLedger(sql, ledger)
    yield* checkKnown(options, applied)
    for (const [id, migration] of pending.filter(([id]) => !applied.has(id))) {
      yield* migration
      yield* sql`INSERT INTO ${sql(ledger)} (id) VALUES (${id})`
    }
    yield* sql.unsafe(`PRAGMA user_version = ${SQLITE_FILE_VERSION}`)
  })).pipe(
    transactionDefects,
    Effect.retry({
      while: (error) => error._tag === "SqlError" && sqliteBusy(error),
      schedule: Schedule.exponential(Duration.millis(5), 1.5).pipe(
        Schedule.jittered,
        Schedule.union(Schedule.spaced(Duration.millis(100))),
        Schedule.upTo(Duration.seconds(30))
      )
    })
  )

/**
 * Applies `migrations` to the database of the `SqlClient` in context: idempotent, safe to run concurrently from
 * many processes, and lock-free once applied (a ledger per migration set records what was applied, on PostgreSQL
 * and SQLite alike). Before it writes anything it refuses, with `SchemaMismatch` naming both versions, a database
 * written by a newer Artana: a ledger entry this code does not know, or (SQLite) a newer `user_version`. On a
 * read-only connection it migrates nothing and only checks. Then, with `columns`, every table must have the
 * columns the store uses. A driver failure is a `StoreError` naming the migration set.
 *
 * @example
 * yield* SqlMigrations.run({ name: "memory", tablePrefix: "artana_", migrations: { "1_memory": createTables } })
 */
export const run = (options: Options): Effect.Effect<void, StoreError | SchemaMismatch, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const ledger = ledgerOf(options)
    const sqlite = sql.onDialectOrElse({ sqlite: () => true, orElse: () => false })
    const version = sqlite ? yield* fileVersion(sql) : SQLITE_FILE_VERSION
    const applied = yield* readLedger(sql, ledger)
    yield* checkKnown(options, applied)
    const pending = ordered(options.migrations).filter(([id]) => !applied.has(id))
    if ((pending.length > 0 || version < SQLITE_FILE_VERSION) && !(yield* readOnly(sql))) {
      // The migrations find the client without transforms in context, as they always have.
      yield* (sqlite ? runSqlite(sql, options, ledger, pending) : runPg(sql, options, ledger, pending)).pipe(
        Effect.provideService(SqlClient.SqlClient, sql)
      )
      return yield* checkColumns(sql, options, yield* readLedger(sql, ledger))
    }
    yield* checkColumns(sql, options, applied)
  }).pipe(
    transactionDefects,
    Effect.catchTag("SqlError", (error) => Effect.fail(storeError(`migrate ${options.name}`, error)))
  )

/**
 * Adds a column to a table unless it is there: PostgreSQL's `ADD COLUMN IF NOT EXISTS`; SQLite, which has no such
 * clause and runs every migration at each open, asks `pragma_table_info` first. `definition` follows the column's
 * name (`TEXT NOT NULL DEFAULT '1'`), per dialect.
 */
export const addColumn = (
  sql: SqlClient.SqlClient,
  table: string,
  column: string,
  definition: { readonly pg: string; readonly sqlite: string }
): Effect.Effect<void, SqlError> =>
  sql.onDialectOrElse({
    pg: () => Effect.asVoid(sql.unsafe(`ALTER TABLE "${table}" ADD COLUMN IF NOT EXISTS ${column} ${definition.pg}`)),
    orElse: () =>
      Effect.flatMap(
        sql`SELECT 1 AS found FROM pragma_table_info(${table}) WHERE name = ${column}`,
        (rows) => rows.length > 0 ? Effect.void : Effect.asVoid(sql.unsafe(`ALTER TABLE ${table} ADD COLUMN ${column} ${definition.sqlite}`))
      )
  })
