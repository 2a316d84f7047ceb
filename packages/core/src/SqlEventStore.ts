/**
 * The `EventStore` written once against `@effect/sql`'s `SqlClient`: SQLite and Postgres run this same code,
 * and differ only where `sql.onDialectOrElse` says so (column types, unique-violation codes, the migration
 * lock) and in how a batch is appended: a store package may plug its dialect's own append in (`AppendDialect`;
 * `@artana/store-postgres` does). `@artana/store-sqlite` and `@artana/store-postgres` provide the client.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type { SchemaMismatch, StoreError } from "./Errors.js"
import { decodePayload as decodeEventPayload } from "./Event.js"
import { EventStore, type Service } from "./EventStore.js"
import * as GroupCommit from "./internal/groupCommit.js"
import type { AppendBatch, Tables } from "./internal/sqlAppend.js"
import * as PortableAppend from "./internal/sqlAppendPortable.js"
import * as SqliteAppend from "./internal/sqlAppendSqlite.js"
import * as EventRead from "./internal/sqlEventRead.js"
import * as EventStoreSchema from "./internal/sqlEventStoreMigrations.js"
import * as EventWrite from "./internal/sqlEventWrite.js"
import * as RunQueries from "./internal/sqlRunQueries.js"
import * as ReadWorker from "./internal/readWorker.js"
import * as SqlMigrations from "./SqlMigrations.js"

/** Options of the SQL event store. */
export interface Options {
  /**
   * Prepended to every table and index name (`artana_` gives `artana_runs`, `artana_events`), so several
   * stores, or several applications, can share one database.
   */
  readonly tablePrefix?: string | undefined
}

/**
 * A driver's prepared statements, which a store package may provide beside its `SqlClient`
 * (`@artana/store-postgres` does, and its `AppendDialect` runs the hot statement of `append`, the INSERT of a tool
 * step's event, with them): a statement the server parsed and planned once per connection, with none of the
 * per-statement work of `SqlClient` (span, scope, compiling; about 25 us of client CPU per statement, measured on
 * PostgreSQL). Used only outside a transaction (inside one, the transaction's connection runs everything).
 */
export interface PreparedStatementsService {
  /** The client whose pool runs these statements: the store uses them only when it runs on this client. */
  readonly client: SqlClient.SqlClient
  /**
   * Runs `text` as a prepared statement on a pooled connection, outside every transaction (so it commits), and
   * resolves with the number of rows it changed.
   */
  readonly execute: (text: string, params: ReadonlyArray<unknown>) => Effect.Effect<number, SqlError>
}

/** The driver's prepared statements, for the store package's own statements. */
export class PreparedStatements extends Context.Tag("@artana/core/SqlEventStore/PreparedStatements")<
  PreparedStatements,
  PreparedStatementsService
>() {}

/**
 * A dialect's own append, which a store package provides beside its `SqlClient` (`@artana/store-postgres` does: one
 * statement and one commit per batch, as a prepared statement). Without one for the store's client, SQLite appends
 * through its head trigger and any other database through plain statements in a transaction.
 */
export interface AppendDialectService {
  /** The client whose database this append writes: the store uses it only when it runs on this client. */
  readonly client: SqlClient.SqlClient
  /** The append for the store's tables (see `AppendBatch`). */
  readonly make: (tables: Tables) => AppendBatch
}

/** The dialect's append; `make` uses it when it is in context for the store's client. */
export class AppendDialect extends Context.Tag("@artana/core/SqlEventStore/AppendDialect")<
  AppendDialect,
  AppendDialectService
>() {}

/**
 * A dialect's own read, which a store package provides beside its `SqlClient` (`@artana/store-sqlite` does): the
 * pages of `readEvents` run on the driver's own prepared statement, rows as arrays of values, without the
 * `SqlClient`'s per-statement work (span, compile, cache lookup, fibers: ~100 us of CPU a page on SQLite, where the
 * statement itself costs ~15 us). Used on SQLite only.
 */
export interface ReadDialectService {
  /** The client whose database this read reads: the store uses it only when it runs on this client. */
  readonly client: SqlClient.SqlClient
  /** Runs a read-only statement (`?` placeholders) on the driver's prepared statement (see `ReadValues`). */
  readonly values: EventRead.ReadValues
  /**
   * A worker thread with a read-only connection of its own to the same database (see `readAhead`), which reads the
   * pages of a long verified read (replay, resume, fork, `Kernel.verify`) ahead of the main thread. Optional: a
   * database only this connection sees (in memory) has none.
   */
  readonly ahead?: ReadWorker.ReadAhead | undefined
}

/** The dialect's read; `make` uses it when it is in context for the store's client. */
export class ReadDialect extends Context.Tag("@artana/core/SqlEventStore/ReadDialect")<
  ReadDialect,
  ReadDialectService
>() {}

export type { ReadValues } from "./internal/sqlEventRead.js"
export type { Opener, ReadAhead } from "./internal/readWorker.js"

/**
 * A read-ahead for a dialect's `ReadDialect` (`@artana/store-sqlite` makes one for a database file): a connection of
 * the store's own, opened with `opener` (on the store's first long read) in the process's read-ahead worker thread and
 * closed when `scope` closes, on which a run's pages are read (the driver's rows, their text, their hashes checked)
 * while the main thread replays the page before. It reads only committed rows: a read inside a transaction never goes
 * to it. Nothing waits for it to open, and a page it cannot read is read on the store's own connection.
 *
 * @example
 * const ahead = yield* SqlEventStore.readAhead({ source: "(config) => ({ rows: (text, params) => ..., close: () => {} })", config: { filename } })
 */
export const readAhead: (opener: ReadWorker.Opener) => Effect.Effect<ReadWorker.ReadAhead, never, Scope.Scope> = ReadWorker.make

// For append dialects (see `AppendDialect`): what every append shares.
export {
  type AppendBatch,
  chunksOf,
  claimedEpoch,
  type EventRow,
  eventValues,
  INSERT_CHUNK,
  packedHash,
  prevHashLookup,
  type Tables
} from "./internal/sqlAppend.js"
// For SQLite append dialects: the statements of SQLite's append (the head trigger's), to run on a driver's own statements.
export { type SqlitePlan, type SqliteStatement, statements as sqliteStatements } from "./internal/sqlAppendSqlite.js"
// For group-committing dialects: the appends of one turn of the event loop, gathered (see `internal/groupCommit.ts`).
export { type Pending as GroupedAppend, turnGroups, waiting } from "./internal/groupCommit.js"

const tables = (options: Options): Tables => {
  const prefix = SqlMigrations.checkPrefix(options.tablePrefix)
  return { runs: `${prefix}runs`, events: `${prefix}events`, prefix }
}

// --- payloads ----------------------------------------------------------------------------------------------

/** Decodes a payload read back from a store (the parsed JSON of what `append` wrote). */
export const decodePayload = decodeEventPayload

// --- migrations --------------------------------------------------------------------------------------------

/**
 * The schema, keyed `<id>_<name>`. Every statement is idempotent (`IF NOT EXISTS`), so two processes opening one
 * database at once both succeed; `SqlMigrations.run` applies them (once per database on Postgres, with a ledger).
 * A later change is a new entry, written to be idempotent in the same way.
 */
export const migrations = (options: Options = {}): Record<string, SqlMigrations.Migration> => EventStoreSchema.migrations(tables(options))

// The indexes the migrations make that a store package's statements rely on (see `internal/sqlEventStoreMigrations.ts`).
export { FENCE_INDEX, RUN_LINEAGE_INDEXES, RUN_LIST_INDEXES, RUN_VERSION_INDEX } from "./internal/sqlEventStoreMigrations.js"

/** Creates the tables and indexes if they do not exist yet (idempotent, safe to run concurrently). */
export const migrate = (options: Options = {}): Effect.Effect<void, StoreError | SchemaMismatch, SqlClient.SqlClient> => {
  const t = tables(options)
  const runColumns = ["run_id", "tenant_id", "workflow", "parent_run_id", "root_run_id", "status", "head_seq", "head_hash", "cost_usd", "created_at", "updated_at", "owner_epoch", "version", "forked_from"]
  // The columns the queries use: a table changed outside Artana is refused on open, not on the first query. PostgreSQL's
  // events are keyed by the run's surrogate key, and their type is their payload's (migration 12).
  return Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const columns = sql.onDialectOrElse({
      pg: () => ({
        [t.runs]: [...runColumns, "run_key"],
        [t.events]: ["run_key", "seq", "event_id", "timestamp", "step_key", "payload", "prev_hash", "hash"]
      }),
      orElse: () => ({
        [t.runs]: runColumns,
        [t.events]: ["run_id", "seq", "event_id", "tenant_id", "timestamp", "type", "step_key", "payload", "prev_hash", "hash"]
      })
    })
    return SqlMigrations.run({ name: "event_store", tablePrefix: options.tablePrefix, migrations: migrations(options), columns })
  })
}

// --- the store -----------------------------------------------------------------------------------------------

/**
 * The append for the store's client: a store package's own (`AppendDialect`) when it is in context for this client
 * (another store's in the same context writes elsewhere), else SQLite's, whose appends made together are committed
 * together (it has one writer, see `internal/groupCommit.ts`), else plain statements in a transaction.
 */
const appendBatchOf = (client: SqlClient.SqlClient, sql: SqlClient.SqlClient, t: Tables): Effect.Effect<AppendBatch> =>
  Effect.flatMap(Effect.serviceOption(AppendDialect), (found) => {
    const dialect = Option.getOrUndefined(Option.filter(found, (d) => d.client === client))
    if (dialect !== undefined) return Effect.succeed(dialect.make(t))
    return sql.onDialectOrElse({
      sqlite: () => GroupCommit.make(sql, SqliteAppend.make(sql, t)),
      orElse: () => Effect.succeed(PortableAppend.make(sql, t))
    })
  })

/**
 * Builds the store on the `SqlClient` in context, creating its tables first.
 *
 * @example
 * const store = yield* SqlEventStore.make({ tablePrefix: "artana_" })
 */
export const make = (options: Options = {}): Effect.Effect<Service, StoreError | SchemaMismatch, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    yield* migrate(options)
    const client = yield* SqlClient.SqlClient
    const sql = client.withoutTransforms()
    const t = tables(options)
    const { append, appendAll, appendPaged } = EventWrite.make(sql, t, yield* appendBatchOf(client, sql, t))
    const readDialect = Option.getOrUndefined(Option.filter(yield* Effect.serviceOption(ReadDialect), (d) => d.client === client))
    const readEvents = EventRead.make(sql, t, readDialect?.values)
    const { getRun, lineageCostUsd, listRuns, listRunsPage, versionCounts } = RunQueries.make(sql, t)
    const service: Service = { append, appendAll, readEvents, getRun, listRuns, listRunsPage, lineageCostUsd, appendPaged, versionCounts }
    return readDialect?.ahead === undefined ? service : ReadWorker.attach(service, EventRead.makeAhead(t, readDialect.ahead))
  })

/**
 * The `EventStore` on the `SqlClient` in context.
 *
 * @example
 * const EventStoreLive = SqlEventStore.layer({ tablePrefix: "artana_" }).pipe(Layer.provide(SqliteClient.layer({ filename })))
 */
export const layer = (options: Options = {}): Layer.Layer<EventStore, StoreError | SchemaMismatch, SqlClient.SqlClient> =>
  Layer.effect(EventStore, make(options))
