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
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import type { OwnershipLost } from "./Errors.js"
import { RunNotFound, type SchemaMismatch, SequenceConflict, StoreError } from "./Errors.js"
import { decodePayload as decodeEventPayload, type Event, EventPayload, type RunInfo, RunStatus } from "./Event.js"
import { type AppendRequest, EventStore, fenced, fenceOf, invalidBatch, type ListRunsFilter, type Service } from "./EventStore.js"
import { StoredEvent } from "./internal/hash.js"
import { type AppendBatch, CONFLICT, orConflict, type Tables } from "./internal/sqlAppend.js"
import * as PortableAppend from "./internal/sqlAppendPortable.js"
import * as SqliteAppend from "./internal/sqlAppendSqlite.js"
import { causeText, errorCode, retryWhile, storeError, transactionDefects } from "./SqlErrors.js"
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

// For append dialects (see `AppendDialect`): what every append shares.
export { type AppendBatch, chunksOf, claimedEpoch, eventValues, INSERT_CHUNK, type Tables } from "./internal/sqlAppend.js"

const tables = (options: Options): Tables => {
  const prefix = SqlMigrations.checkPrefix(options.tablePrefix)
  return { runs: `${prefix}runs`, events: `${prefix}events`, prefix }
}

// --- payloads ----------------------------------------------------------------------------------------------

/** Decodes a payload read back from a store (the parsed JSON of what `append` wrote). */
export const decodePayload = decodeEventPayload

type Fields = { readonly [key: string]: unknown }

// --- rows ----------------------------------------------------------------------------------------------------

/** Drivers return integers as number, bigint (SQLite safe integers) or string (Postgres BIGINT). */
const toNumber = (value: unknown): number | undefined => {
  if (typeof value === "number") return value
  if (typeof value === "bigint") return Number(value)
  if (typeof value === "string" && value.trim() !== "") {
    const n = Number(value)
    return Number.isNaN(n) ? undefined : n
  }
  return undefined
}

class CorruptRow {
  constructor(readonly column: string, readonly reason: string) {}
}

const num = (row: Fields, column: string): number => numberValue(row[column], column)

const text = (row: Fields, column: string): string => textValue(row[column], column)

const numberValue = (value: unknown, column: string): number => {
  const n = toNumber(value)
  if (n === undefined) throw new CorruptRow(column, `expected a number, found ${typeof value}`)
  return n
}

const textValue = (value: unknown, column: string): string => {
  if (typeof value !== "string") throw new CorruptRow(column, `expected text, found ${typeof value}`)
  return value
}

const isRunStatus = Schema.is(RunStatus)

/**
 * The columns `readEvents` selects, in order. Replay reads them as value arrays (`sql.values`): the driver builds
 * no object with named keys per row, which is a third of a 10,000-event read on SQLite.
 */
const EVENT_COLUMNS = ["seq", "event_id", "timestamp", "type", "step_key", "payload", "prev_hash", "hash"] as const
const EVENT_COLUMN_LIST = EVENT_COLUMNS.join(", ")

const eventFromValues = (runId: string, tenantId: string, row: ReadonlyArray<unknown>): Event => {
  let json: unknown
  const source = textValue(row[5], "payload")
  try {
    json = JSON.parse(source)
  } catch (cause) {
    throw new CorruptRow("payload", `not JSON (${causeText(cause)})`)
  }
  const type = textValue(row[3], "type")
  if (!EVENT_TYPES.has(type)) throw new CorruptRow("type", `unknown event type ${JSON.stringify(type)}`)
  const payload = decodePayload(json)
  if (Either.isLeft(payload)) throw new CorruptRow("payload", payload.left)
  // The stored text goes with the event: the chain covers the bytes as stored, so a field added to the stored payload,
  // which decoding drops, still breaks it.
  return new StoredEvent(
    textValue(row[1], "event_id"),
    runId,
    tenantId,
    numberValue(row[0], "seq"),
    numberValue(row[2], "timestamp"),
    type,
    textValue(row[4], "step_key"),
    payload.right,
    textValue(row[6], "prev_hash"),
    textValue(row[7], "hash"),
    source
  )
}

/** Every event type the log may hold. */
const EVENT_TYPES: ReadonlySet<string> = new Set(
  EventPayload.members.flatMap((m) =>
    SchemaAST.getPropertySignatures(m.ast).flatMap((p) => (p.name === "_tag" && SchemaAST.isLiteral(p.type) ? [String(p.type.literal)] : []))
  )
)

const runFromRow = (row: Fields): RunInfo => {
  const status = row.status
  if (!isRunStatus(status)) throw new CorruptRow("status", `unknown run status ${JSON.stringify(status)}`)
  const parent = row.parent_run_id
  if (parent !== null && parent !== undefined && typeof parent !== "string") {
    throw new CorruptRow("parent_run_id", `expected text, found ${typeof parent}`)
  }
  return {
    runId: text(row, "run_id"),
    tenantId: text(row, "tenant_id"),
    workflow: text(row, "workflow"),
    ...(typeof parent === "string" ? { parentRunId: parent } : {}),
    rootRunId: text(row, "root_run_id"),
    status,
    headSeq: num(row, "head_seq"),
    headHash: text(row, "head_hash"),
    costUsd: num(row, "cost_usd"),
    createdAt: num(row, "created_at"),
    updatedAt: num(row, "updated_at"),
    ownerEpoch: num(row, "owner_epoch")
  }
}

/** Maps rows with `f`; a row that does not decode is a `StoreError` naming the row and column. */
const decodeRows = <Row, A>(
  operation: string,
  rows: ReadonlyArray<Row>,
  describe: (row: Row) => string,
  f: (row: Row) => A
): Effect.Effect<Array<A>, StoreError> =>
  Effect.suspend(() => {
    const out = new Array<A>(rows.length)
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!
      try {
        out[i] = f(row)
      } catch (cause) {
        if (!(cause instanceof CorruptRow)) return Effect.die(cause)
        return Effect.fail(
          new StoreError({ operation, reason: `corrupt row (${describe(row)}), column ${cause.column}: ${cause.reason}` })
        )
      }
    }
    return Effect.succeed(out)
  })

// --- migrations --------------------------------------------------------------------------------------------

/**
 * The schema, keyed `<id>_<name>`. Every statement is idempotent (`IF NOT EXISTS`), so two processes opening one
 * database at once both succeed; `SqlMigrations.run` applies them (once per database on Postgres, with a ledger).
 * A later change is a new entry, written to be idempotent in the same way.
 */
export const migrations = (options: Options = {}): Record<string, SqlMigrations.Migration> => {
  const t = tables(options)
  return {
    "1_event_store": Effect.gen(function*() {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      // Postgres: BIGINT comes back as a string and a fraction of a millisecond would not fit, so times are
      // DOUBLE PRECISION there; SQLite's INTEGER affinity keeps whatever number it is given.
      const types = sql.onDialectOrElse({
        pg: () => ({ int: "BIGINT", time: "DOUBLE PRECISION", real: "DOUBLE PRECISION" }),
        orElse: () => ({ int: "INTEGER", time: "INTEGER", real: "REAL" })
      })
      yield* sql`CREATE TABLE IF NOT EXISTS ${sql(t.runs)} (
  run_id TEXT PRIMARY KEY NOT NULL,
  tenant_id TEXT NOT NULL,
  workflow TEXT NOT NULL,
  parent_run_id TEXT,
  root_run_id TEXT NOT NULL,
  status TEXT NOT NULL,
  head_seq ${sql.literal(types.int)} NOT NULL,
  head_hash TEXT NOT NULL,
  cost_usd ${sql.literal(types.real)} NOT NULL,
  created_at ${sql.literal(types.time)} NOT NULL,
  updated_at ${sql.literal(types.time)} NOT NULL
)`
      yield* sql`CREATE INDEX IF NOT EXISTS ${sql(`${t.prefix}runs_tenant_created_idx`)} ON ${sql(t.runs)} (tenant_id, created_at)`
      yield* sql`CREATE INDEX IF NOT EXISTS ${sql(`${t.prefix}runs_root_idx`)} ON ${sql(t.runs)} (root_run_id)`
      yield* sql`CREATE INDEX IF NOT EXISTS ${sql(`${t.prefix}runs_parent_idx`)} ON ${sql(t.runs)} (parent_run_id)`
      // SQLite: WITHOUT ROWID clusters a run's events by (run_id, seq), so a replay is one range scan.
      yield* sql`CREATE TABLE IF NOT EXISTS ${sql(t.events)} (
  run_id TEXT NOT NULL REFERENCES ${sql(t.runs)} (run_id),
  seq ${sql.literal(types.int)} NOT NULL,
  event_id TEXT NOT NULL,
  tenant_id TEXT NOT NULL,
  timestamp ${sql.literal(types.time)} NOT NULL,
  type TEXT NOT NULL,
  step_key TEXT NOT NULL,
  payload TEXT NOT NULL,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
)${sql.literal(sql.onDialectOrElse({ sqlite: () => " WITHOUT ROWID", orElse: () => "" }))}`
      // The run's head follows its events: a trigger advances it with each inserted event, and refuses an event
      // that does not come right after the head (a second writer, a gap) or belongs to another tenant. So an
      // append that changes neither status nor cost (a tool or step batch) is one INSERT: one statement, one
      // commit, atomic with the head it moves.
      const trigger = `${t.prefix}events_advance_head`
      yield* sql.onDialectOrElse({
        // Names are quoted as `sql(name)` quotes them in the statements above, so a prefix with capitals names the
        // same tables here. DROP + CREATE rather than CREATE OR REPLACE TRIGGER, which needs PostgreSQL 14.
        pg: () =>
          Effect.all([
            sql.unsafe(`CREATE OR REPLACE FUNCTION "${trigger}"() RETURNS trigger LANGUAGE plpgsql AS $artana$
BEGIN
  UPDATE "${t.runs}" SET head_seq = NEW.seq, head_hash = NEW.hash, updated_at = NEW.timestamp
   WHERE run_id = NEW.run_id AND tenant_id = NEW.tenant_id AND head_seq = NEW.seq - 1;
  IF NOT FOUND THEN RAISE EXCEPTION '${CONFLICT}'; END IF;
  RETURN NULL;
END
$artana$`),
            sql.unsafe(`DROP TRIGGER IF EXISTS "${trigger}" ON "${t.events}"`),
            sql.unsafe(`CREATE TRIGGER "${trigger}" AFTER INSERT ON "${t.events}" FOR EACH ROW EXECUTE FUNCTION "${trigger}"()`)
          ], { discard: true }),
        orElse: () =>
          sql.unsafe(`CREATE TRIGGER IF NOT EXISTS ${trigger} AFTER INSERT ON ${t.events} FOR EACH ROW BEGIN
  SELECT RAISE(ABORT, '${CONFLICT}') WHERE NOT EXISTS (
    SELECT 1 FROM ${t.runs} WHERE run_id = NEW.run_id AND tenant_id = NEW.tenant_id AND head_seq = NEW.seq - 1);
  UPDATE ${t.runs} SET head_seq = NEW.seq, head_hash = NEW.hash, updated_at = NEW.timestamp WHERE run_id = NEW.run_id;
END`)
      })
    }),
    // PostgreSQL appends move the head in the statement that inserts the events (a data-modifying CTE, see
    // `appendPg`), so the head trigger and the foreign key (whose check locks the run's row for every event) go.
    // SQLite keeps both: it has no data-modifying CTE, and its checks cost little.
    "2_postgres_head_in_statement": Effect.gen(function*() {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      const trigger = `${t.prefix}events_advance_head`
      yield* sql.onDialectOrElse({
        pg: () =>
          Effect.all([
            sql.unsafe(`DROP TRIGGER IF EXISTS "${trigger}" ON "${t.events}"`),
            sql.unsafe(`DROP FUNCTION IF EXISTS "${trigger}"()`),
            sql.unsafe(`DO $artana$ DECLARE c text; BEGIN
  FOR c IN SELECT conname FROM pg_constraint
    WHERE conrelid = '"${t.events}"'::regclass AND confrelid = '"${t.runs}"'::regclass AND contype = 'f' LOOP
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', '${t.events}', c);
  END LOOP;
END $artana$`)
          ], { discard: true }),
        orElse: () => Effect.void
      })
    }),
    // Tenancy is a key: a run is (tenant_id, run_id), an event (tenant_id, run_id, seq), so the same run id in two
    // tenants is two runs. Lineage (parent and root run ids) is within a tenant, and its indexes lead with it.
    "3_tenant_run_key": Effect.gen(function*() {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      yield* sql.onDialectOrElse({ pg: () => tenantKeyPg(sql, t), orElse: () => tenantKeySqlite(sql, t) })
    }),
    // The run's owner epoch (fencing token): every execution that claims the run raises it, and an append by an
    // owner older than the newest is refused in the statement that would write it (see `fenceOf`). Existing runs
    // start at 0, as if no execution had claimed them yet.
    "4_owner_epoch": Effect.gen(function*() {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      yield* sql.onDialectOrElse({
        pg: () => sql.unsafe(`ALTER TABLE "${t.runs}" ADD COLUMN IF NOT EXISTS owner_epoch BIGINT NOT NULL DEFAULT 0`),
        // SQLite has no ADD COLUMN IF NOT EXISTS, and runs every migration on each open: ask first.
        orElse: () =>
          Effect.flatMap(
            sql`SELECT 1 AS found FROM pragma_table_info(${t.runs}) WHERE name = 'owner_epoch'`,
            (rows) => rows.length > 0 ? Effect.void : sql.unsafe(`ALTER TABLE ${t.runs} ADD COLUMN owner_epoch INTEGER NOT NULL DEFAULT 0`)
          )
      })
    })
  }
}

/** The primary key's constraint name of a Postgres table (looked up: it depends on how the table was made). */
const primaryKeyPg = (sql: SqlClient.SqlClient, table: string) =>
  Effect.map(
    sql<{ readonly name: string }>`SELECT conname AS name FROM pg_constraint WHERE conrelid = ${`"${table}"`}::regclass AND contype = 'p'`,
    (rows) => rows[0]?.name
  )

/**
 * PostgreSQL: the keys are swapped in place (`ALTER TABLE` builds the new unique index; the tables are locked for
 * as long as that takes, once, when the first process of the new version opens the database).
 */
const tenantKeyPg = (sql: SqlClient.SqlClient, t: Tables) =>
  Effect.gen(function*() {
    for (const [table, columns] of [[t.runs, "tenant_id, run_id"], [t.events, "tenant_id, run_id, seq"]] as const) {
      const key = yield* primaryKeyPg(sql, table)
      const drop = key === undefined ? "" : `DROP CONSTRAINT "${key}", `
      yield* sql.unsafe(`ALTER TABLE "${table}" ${drop}ADD PRIMARY KEY (${columns})`)
    }
    yield* Effect.all([
      sql.unsafe(`DROP INDEX IF EXISTS "${t.prefix}runs_root_idx"`),
      sql.unsafe(`DROP INDEX IF EXISTS "${t.prefix}runs_parent_idx"`),
      sql.unsafe(`CREATE INDEX "${t.prefix}runs_root_idx" ON "${t.runs}" (tenant_id, root_run_id)`),
      sql.unsafe(`CREATE INDEX "${t.prefix}runs_parent_idx" ON "${t.runs}" (tenant_id, parent_run_id)`)
    ], { discard: true })
  })

/** The SQLite head trigger: an event must follow its own run's head (same tenant, same run), and moves it. */
const headTriggerSqlite = (t: Tables) =>
  `CREATE TRIGGER ${t.prefix}events_advance_head AFTER INSERT ON ${t.events} FOR EACH ROW BEGIN
  SELECT RAISE(ABORT, '${CONFLICT}') WHERE NOT EXISTS (
    SELECT 1 FROM ${t.runs} WHERE tenant_id = NEW.tenant_id AND run_id = NEW.run_id AND head_seq = NEW.seq - 1);
  UPDATE ${t.runs} SET head_seq = NEW.seq, head_hash = NEW.hash, updated_at = NEW.timestamp
   WHERE tenant_id = NEW.tenant_id AND run_id = NEW.run_id;
END`

/**
 * SQLite cannot alter a primary key, so the tables are rebuilt (SQLite's documented procedure): new tables under
 * other names, the rows copied (runs with their rowids, which order runs created in one millisecond), the old
 * tables dropped and the new ones renamed. The events table stays WITHOUT ROWID, clustered by (tenant, run, seq),
 * so a replay is one range scan. Every open runs every SQLite migration, so this one first looks at the runs
 * table's key and does nothing once it is (tenant_id, run_id). It runs in the migration's transaction: a crash
 * leaves the old tables whole.
 */
const tenantKeySqlite = (sql: SqlClient.SqlClient, t: Tables) =>
  Effect.gen(function*() {
    const key = yield* sql<{ readonly name: string }>`SELECT name FROM pragma_table_info(${t.runs}) WHERE pk > 0 ORDER BY pk`
    if (key.map((c) => c.name).join(",") === "tenant_id,run_id") return
    const runsNew = `${t.prefix}runs_v3`
    const eventsNew = `${t.prefix}events_v3`
    const runColumns = "run_id, tenant_id, workflow, parent_run_id, root_run_id, status, head_seq, head_hash, cost_usd, created_at, updated_at"
    const eventColumns = "run_id, seq, event_id, tenant_id, timestamp, type, step_key, payload, prev_hash, hash"
    for (
      const statement of [
        `DROP TRIGGER IF EXISTS ${t.prefix}events_advance_head`,
        `CREATE TABLE ${runsNew} (
  run_id TEXT NOT NULL,
  tenant_id TEXT NOT NULL,
  workflow TEXT NOT NULL,
  parent_run_id TEXT,
  root_run_id TEXT NOT NULL,
  status TEXT NOT NULL,
  head_seq INTEGER NOT NULL,
  head_hash TEXT NOT NULL,
  cost_usd REAL NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, run_id)
)`,
        `INSERT INTO ${runsNew} (rowid, ${runColumns}) SELECT rowid, ${runColumns} FROM ${t.runs} ORDER BY rowid`,
        `CREATE TABLE ${eventsNew} (
  run_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  event_id TEXT NOT NULL,
  tenant_id TEXT NOT NULL,
  timestamp INTEGER NOT NULL,
  type TEXT NOT NULL,
  step_key TEXT NOT NULL,
  payload TEXT NOT NULL,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL,
  PRIMARY KEY (tenant_id, run_id, seq),
  FOREIGN KEY (tenant_id, run_id) REFERENCES ${runsNew} (tenant_id, run_id)
) WITHOUT ROWID`,
        `INSERT INTO ${eventsNew} (${eventColumns}) SELECT ${eventColumns} FROM ${t.events}`,
        `DROP TABLE ${t.events}`,
        `DROP TABLE ${t.runs}`,
        // Renaming rewrites the events' foreign key to the new name of their runs table.
        `ALTER TABLE ${runsNew} RENAME TO ${t.runs}`,
        `ALTER TABLE ${eventsNew} RENAME TO ${t.events}`,
        `CREATE INDEX ${t.prefix}runs_tenant_created_idx ON ${t.runs} (tenant_id, created_at)`,
        `CREATE INDEX ${t.prefix}runs_root_idx ON ${t.runs} (tenant_id, root_run_id)`,
        `CREATE INDEX ${t.prefix}runs_parent_idx ON ${t.runs} (tenant_id, parent_run_id)`,
        headTriggerSqlite(t)
      ]
    ) yield* sql.unsafe(statement)
  })

/** Creates the tables and indexes if they do not exist yet (idempotent, safe to run concurrently). */
export const migrate = (options: Options = {}): Effect.Effect<void, StoreError | SchemaMismatch, SqlClient.SqlClient> => {
  const t = tables(options)
  // The columns the queries use: a table changed outside Artana is refused on open, not on the first query.
  const columns = {
    [t.runs]: ["run_id", "tenant_id", "workflow", "parent_run_id", "root_run_id", "status", "head_seq", "head_hash", "cost_usd", "created_at", "updated_at", "owner_epoch"],
    [t.events]: ["run_id", "seq", "event_id", "tenant_id", "timestamp", "type", "step_key", "payload", "prev_hash", "hash"]
  }
  return SqlMigrations.run({ name: "event_store", tablePrefix: options.tablePrefix, migrations: migrations(options), columns })
}

/** PostgreSQL's serialization failure and deadlock: the server rolled the statement back, and it may run again. */
const retryable = (error: SqlError | SequenceConflict | StoreError): boolean =>
  error._tag === "SqlError" && (errorCode(error) === "40001" || errorCode(error) === "40P01")

/**
 * How often such a statement runs again. At once, without a delay: the transaction it lost to has ended (and a
 * delay would be the caller's clock's, which a test may hold still).
 */
const RETRIES = 8

// --- the store -----------------------------------------------------------------------------------------------

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
    const runs = sql(t.runs)
    const events = sql(t.events)
    // A store package's own append, for this client only (another store's in the same context writes elsewhere).
    const dialect = Option.getOrUndefined(Option.filter(yield* Effect.serviceOption(AppendDialect), (d) => d.client === client))
    const appendBatch: AppendBatch = dialect !== undefined
      ? dialect.make(t)
      : sql.onDialectOrElse({ sqlite: () => SqliteAppend.make(sql, t), orElse: () => PortableAppend.make(sql, t) })

    /**
     * A refused batch of a fenced writer: `OwnershipLost` when the run has a newer owner (a conflict of such a writer
     * is fencing as well), the conflict otherwise. Read only when an append failed.
     */
    const fencedOrConflict = (request: AppendRequest) => (error: SequenceConflict): Effect.Effect<never, SequenceConflict | OwnershipLost | StoreError> =>
      fenceOf(request) === undefined
        ? Effect.fail(error)
        : sql`SELECT owner_epoch FROM ${runs} WHERE run_id = ${request.runId} AND tenant_id = ${request.tenantId}`.pipe(
          Effect.catchTag("SqlError", (e) => Effect.fail(storeError("append", e))),
          Effect.flatMap(([row]) => {
            const epoch = row === undefined ? undefined : toNumber(row.owner_epoch)
            return Effect.fail(epoch === undefined ? error : fenced(request, epoch) ?? error)
          })
        )

    const append = (request: AppendRequest): Effect.Effect<void, SequenceConflict | OwnershipLost | StoreError> => {
      const last = request.events[request.events.length - 1]
      if (last === undefined) return Effect.void
      const conflict = () => new SequenceConflict({ runId: request.runId, expectedSeq: request.expectedSeq })
      const bad = invalidBatch(request)
      if (bad !== undefined) return Effect.fail(new StoreError({ operation: "append", reason: bad }))
      return Effect.contextWithEffect((context) => {
        const inTransaction = Context.getOption(context, SqlClient.TransactionConnection)._tag === "Some"
        const batch = appendBatch(request, conflict, inTransaction)
        // A serialization failure or a deadlock (PostgreSQL, under REPEATABLE READ or SERIALIZABLE, or a lock cycle)
        // rolled the statement back: outside the caller's transaction it runs again, and a writer that really
        // lost the race then conflicts. Inside one, the caller's transaction is what must start again.
        const retried = inTransaction ? batch : retryWhile(batch, retryable, RETRIES)
        return Effect.catchTag(Effect.catchTag(retried, "SqlError", orConflict(sql, "append", conflict)), "SequenceConflict", fencedOrConflict(request))
      })
    }

    /**
     * Every batch in one transaction: each is appended as `append` appends it inside a caller's transaction (the
     * dialect's own append too), so a refused one rolls back the ones before it. A serialization failure or a
     * deadlock runs the whole transaction again.
     */
    const appendAll = (requests: ReadonlyArray<AppendRequest>): Effect.Effect<void, SequenceConflict | OwnershipLost | StoreError> => {
      const batches = requests.filter((r) => r.events.length > 0)
      if (batches.length <= 1) return batches.length === 0 ? Effect.void : append(batches[0]!)
      const all = transactionDefects(sql.withTransaction(Effect.forEach(batches, append, { discard: true })))
      return Effect.contextWithEffect((context) => {
        const inTransaction = Context.getOption(context, SqlClient.TransactionConnection)._tag === "Some"
        const retried = inTransaction ? all : retryWhile(all, (error) => error._tag === "SqlError" && retryable(error), RETRIES)
        return Effect.catchTag(retried, "SqlError", (error) => Effect.fail(storeError("appendAll", error)))
      })
    }

    const runExists = (tenantId: string, runId: string) =>
      Effect.map(
        sql`SELECT 1 AS found FROM ${runs} WHERE run_id = ${runId} AND tenant_id = ${tenantId}`,
        (rows) => rows.length > 0
      )

    const readEvents = (tenantId: string, runId: string, fromSeq = 1, limit?: number): Effect.Effect<ReadonlyArray<Event>, RunNotFound | StoreError> =>
      Effect.gen(function*() {
        const page = limit === undefined ? sql`` : sql`LIMIT ${Math.max(0, Math.floor(limit))}`
        const rows = yield* sql`SELECT ${sql.literal(EVENT_COLUMN_LIST)} FROM ${events} WHERE run_id = ${runId} AND tenant_id = ${tenantId} AND seq >= ${fromSeq} ORDER BY seq ${page}`.values
        if (rows.length === 0) {
          if (!(yield* runExists(tenantId, runId))) return yield* new RunNotFound({ runId, tenantId })
          return []
        }
        return yield* decodeRows(
          "readEvents",
          rows,
          (row) => `run ${runId} seq ${String(row[0])}`,
          (row) => eventFromValues(runId, tenantId, row)
        )
      }).pipe(
        Effect.catchTag("SqlError", (error) => Effect.fail(storeError("readEvents", error))),
        Effect.withSpan("SqlEventStore.readEvents", { attributes: { runId, fromSeq, limit } })
      )

    const getRun = (tenantId: string, runId: string): Effect.Effect<RunInfo, RunNotFound | StoreError> =>
      Effect.gen(function*() {
        const rows = yield* sql`SELECT ${runColumns} FROM ${runs} r ${runHead} WHERE r.run_id = ${runId} AND r.tenant_id = ${tenantId}`
        const [run] = yield* decodeRows("getRun", rows, () => `run ${runId}`, runFromRow)
        if (run === undefined) return yield* new RunNotFound({ runId, tenantId })
        return run
      }).pipe(
        Effect.catchTag("SqlError", (error) => Effect.fail(storeError("getRun", error))),
        Effect.withSpan("SqlEventStore.getRun", { attributes: { runId } })
      )

    // Runs created in the same millisecond come back in creation order, as the in-memory store's stable sort
    // gives them: SQLite's rowid records it; Postgres has no such column, so the run id decides there.
    const tieBreak = sql.onDialectOrElse({ sqlite: () => sql`r.rowid ASC`, orElse: () => sql`r.run_id ASC` })

    // The run's head. SQLite: the row's columns, which the head trigger keeps. PostgreSQL: the run's last event
    // (one index probe), unless the row records a later one (written with the last status or cost change): then
    // the log was cut after it, and the row's head is what `Verify` compares the log against.
    const runHead = sql.onDialectOrElse({
      pg: () => sql.literal(`LEFT JOIN LATERAL (SELECT seq, hash, timestamp FROM "${t.events}" e WHERE e.tenant_id = r.tenant_id AND e.run_id = r.run_id ORDER BY e.seq DESC LIMIT 1) h ON true`),
      orElse: () => sql``
    })
    const runColumns = sql.literal(sql.onDialectOrElse({
      pg: () => {
        const head = "h.seq IS NOT NULL AND h.seq >= r.head_seq"
        return `r.run_id, r.tenant_id, r.workflow, r.parent_run_id, r.root_run_id, r.status, r.cost_usd, r.created_at, r.owner_epoch, CASE WHEN ${head} THEN h.seq ELSE r.head_seq END AS head_seq, CASE WHEN ${head} THEN h.hash ELSE r.head_hash END AS head_hash, CASE WHEN ${head} THEN h.timestamp ELSE r.updated_at END AS updated_at`
      },
      orElse: () => "r.*"
    }))

    const listRuns = (tenantId: string, filter: ListRunsFilter = {}): Effect.Effect<ReadonlyArray<RunInfo>, StoreError> => {
      const where = [sql`r.tenant_id = ${tenantId}`]
      if (filter.status !== undefined) where.push(sql`r.status = ${filter.status}`)
      if (filter.workflow !== undefined) where.push(sql`r.workflow = ${filter.workflow}`)
      if (filter.parentRunId !== undefined) where.push(sql`r.parent_run_id = ${filter.parentRunId}`)
      if (filter.rootRunId !== undefined) where.push(sql`r.root_run_id = ${filter.rootRunId}`)
      const limit = filter.limit === undefined ? sql`` : sql`LIMIT ${Math.max(0, Math.floor(filter.limit))}`
      return sql`SELECT ${runColumns} FROM ${runs} r ${runHead} WHERE ${sql.and(where)} ORDER BY r.created_at DESC, ${tieBreak} ${limit}`.pipe(
        Effect.flatMap((rows) => decodeRows("listRuns", rows, (row) => `run ${String(row.run_id)}`, runFromRow)),
        Effect.catchTag("SqlError", (error) => Effect.fail(storeError("listRuns", error))),
        Effect.withSpan("SqlEventStore.listRuns")
      )
    }

    return { append, appendAll, readEvents, getRun, listRuns } satisfies Service
  })

/**
 * The `EventStore` on the `SqlClient` in context.
 *
 * @example
 * const EventStoreLive = SqlEventStore.layer({ tablePrefix: "artana_" }).pipe(Layer.provide(SqliteClient.layer({ filename })))
 */
export const layer = (options: Options = {}): Layer.Layer<EventStore, StoreError | SchemaMismatch, SqlClient.SqlClient> =>
  Layer.effect(EventStore, make(options))
