/**
 * The `EventStore` written once against `@effect/sql`'s `SqlClient`: SQLite and Postgres run this same code,
 * and differ only where `sql.onDialectOrElse` says so (column types, unique-violation codes, the migration
 * lock) and in how a batch is appended: a store package may plug its dialect's own append in (`AppendDialect`;
 * `@artana/store-postgres` does). `@artana/store-sqlite` and `@artana/store-postgres` provide the client.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { OwnershipLost } from "./Errors.js"
import type { InvalidInput } from "./Errors.js"
import { RunNotFound, type SchemaMismatch, SequenceConflict, StoreError } from "./Errors.js"
import { decodePayload as decodeEventPayload, decodeStoredPayload, type Event, EVENT_TYPES, type RunInfo, RunStatus } from "./Event.js"
import {
  type AppendRequest,
  EventStore,
  fenced,
  fenceOf,
  IN_FLIGHT,
  invalidBatch,
  type ListRunsFilter,
  type ListRunsPageFilter,
  pageOf,
  type RunsPage,
  type Service,
  type VersionCount,
  type VersionCountsFilter
} from "./EventStore.js"
import { GENESIS_HASH, StoredEvent } from "./internal/hash.js"
import * as RunCursor from "./internal/runCursor.js"
import { type AppendBatch, CONFLICT, orConflict, type Tables } from "./internal/sqlAppend.js"
import * as Codec from "./internal/sqlCodec.js"
import * as PortableAppend from "./internal/sqlAppendPortable.js"
import * as GroupCommit from "./internal/groupCommit.js"
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
export { type Pending as GroupedAppend, turnGroups } from "./internal/groupCommit.js"

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
 * PostgreSQL's `readEvents` gives a stored value that is not packed (not 32 or 16 bytes) as this prefix and its bytes
 * in hex: a packed one is plain hex, so the prefix (a backslash, which hex has not) tells them apart.
 */
const PG_BYTES = "\\x"
const PG_BYTES_SQL = `'${PG_BYTES}'`

/** A hash or id `readEvents` selected (see `eventColumnList`), as `sqlCodec.unpack` reads it. */
const selected = (kind: typeof Codec.HASH, value: unknown, pg: boolean): unknown =>
  !pg ? sqliteText(kind, value) : typeof value === "string" && value.startsWith(PG_BYTES) ? Buffer.from(value.slice(PG_BYTES.length), "hex") : value

/**
 * The select list of `readEvents`, in order: seq, event_id, timestamp, type, step_key, payload, prev_hash, hash. Replay
 * reads them as value arrays (`sql.values`): the driver builds no object with named keys per row, which is a third of
 * a 10,000-event read on SQLite. Both dialects give a packed hash or id back as text made in SQL (`hex`, `encode`),
 * and anything else as bytes that `sqlCodec.unpack` reads (SQLite: as stored, which may be text). SQLite's driver
 * would make a Buffer of each blob (three a row, each its own allocation, which the garbage collector then tracks),
 * and a read of 10,000 events spent a third of its time collecting them; PostgreSQL sends bytea as hex text anyway,
 * which its driver would parse into a Buffer for the store to turn back into hex.
 */
const eventColumnList = (dialect: "pg" | "sqlite"): string => {
  if (dialect === "pg") {
    // Packed values as their text, anything else as `PG_BYTES` and its bytes in hex.
    const other = (c: string) => `${PG_BYTES_SQL} || encode(${c}, 'hex')`
    const hash = (c: string) => `CASE WHEN octet_length(${c}) = 32 THEN encode(${c}, 'hex') ELSE ${other(c)} END`
    const part = (from: number, length: number) => `substr(encode(event_id, 'hex'), ${from}, ${length})`
    const uuid = `CASE WHEN octet_length(event_id) = 16 THEN ${part(1, 8)} || '-' || ${part(9, 4)} || '-' || ${part(13, 4)} || '-' || ${
      part(17, 4)
    } || '-' || ${part(21, 12)} ELSE ${other("event_id")} END`
    return `seq, ${uuid}, timestamp, type, step_key, payload, ${hash("prev_hash")}, ${hash("hash")}`
  }
  // A packed value as its bare `hex` (upper case: `sqliteText` writes it as `unpack` would), stored text as
  // `SQLITE_TEXT` and the text, any other blob as it is. Lower-casing and the UUID's dashes in SQL (five `substr`s) cost
  // a 10,000-event read more than the rest of its SQL.
  const packed = (c: string, bytes: number) =>
    `CASE WHEN typeof(${c}) = 'blob' AND length(${c}) = ${bytes} THEN hex(${c}) WHEN typeof(${c}) = 'text' THEN '${SQLITE_TEXT}' || ${c} ELSE ${c} END`
  return `seq, ${packed("event_id", Codec.UUID.bytes)}, timestamp, type, step_key, payload, ${packed("prev_hash", Codec.HASH.bytes)}, ${
    packed("hash", Codec.HASH.bytes)
  }`
}

/** The mark SQLite's `readEvents` puts before a value stored as text (upper-case hex, a packed value's, has none). */
const SQLITE_TEXT = "~"

/** A hash or id SQLite's `readEvents` selected (see `eventColumnList`), as `sqlCodec.unpack` reads it. */
const sqliteText = (kind: typeof Codec.HASH, value: unknown): unknown => {
  if (typeof value !== "string") return value
  if (value.startsWith(SQLITE_TEXT)) return value.slice(SQLITE_TEXT.length)
  const hex = value.toLowerCase()
  // Joined, not concatenated: a rope of nine parts would be flattened (copied) by every later use (the chain's hash).
  return kind === Codec.UUID ? [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20), hex.slice(20)].join("-") : hex
}

/** A stored hash or event id as text (see `sqlCodec`). */
const unpacked = (kind: typeof Codec.HASH, value: unknown, column: string): string => {
  const text = Codec.unpack(kind, value)
  if (text === undefined) throw new CorruptRow(column, `expected bytes or text, found ${value instanceof Uint8Array ? "bytes that are not UTF-8" : typeof value}`)
  return text
}

/**
 * The hash a row stores, as text (a read keeps it to complete the next row's prev_hash, see `eventFromValues`).
 */
const hashOf = (row: ReadonlyArray<unknown>, pg: boolean): string => unpacked(Codec.HASH, selected(Codec.HASH, row[7], pg), "hash")

/**
 * An event from its row. `previousHash` is the hash of the run's row before it (the genesis hash before the first):
 * a NULL prev_hash stands for it (see `eventValues`).
 */
const eventFromValues = (runId: string, tenantId: string, row: ReadonlyArray<unknown>, previousHash: string, pg: boolean): Event => {
  let json: unknown
  const source = textValue(row[5], "payload")
  try {
    json = JSON.parse(source)
  } catch (cause) {
    throw new CorruptRow("payload", `not JSON (${causeText(cause)})`)
  }
  const type = textValue(row[3], "type")
  if (!EVENT_TYPES.has(type)) throw new CorruptRow("type", `unknown event type ${JSON.stringify(type)}`)
  const payload = decodeStoredPayload(type, json)
  if (Either.isLeft(payload)) throw new CorruptRow("payload", payload.left)
  const prev = row[6]
  // The stored text goes with the event: the chain covers the bytes as stored, so a field added to the stored payload,
  // which decoding drops, still breaks it.
  return new StoredEvent(
    unpacked(Codec.UUID, selected(Codec.UUID, row[1], pg), "event_id"),
    runId,
    tenantId,
    numberValue(row[0], "seq"),
    numberValue(row[2], "timestamp"),
    type,
    textValue(row[4], "step_key"),
    payload.right,
    prev === null ? previousHash : unpacked(Codec.HASH, selected(Codec.HASH, prev, pg), "prev_hash"),
    hashOf(row, pg),
    source
  )
}


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
    headHash: unpacked(Codec.HASH, row.head_hash, "head_hash"),
    costUsd: num(row, "cost_usd"),
    createdAt: num(row, "created_at"),
    updatedAt: num(row, "updated_at"),
    ownerEpoch: num(row, "owner_epoch"),
    version: text(row, "version"),
    ...(typeof row.forked_from === "string" ? { forkedFrom: row.forked_from } : {})
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
      yield* SqlMigrations.addColumn(sql, t.runs, "owner_epoch", { pg: "BIGINT NOT NULL DEFAULT 0", sqlite: "INTEGER NOT NULL DEFAULT 0" })
    }),
    // `listRuns` at a year's scale: one index per filter a person lists by (the tenant alone, its runs of a status, of
    // a workflow), each in the order runs are listed (newest first, ties in the store's order: SQLite's rowid, which
    // every SQLite index ends with, PostgreSQL's run id, its last column here), so a page is a range scan that stops
    // after `limit` rows, a time filter bounds the range, and a cursor seeks into it. They replace the index on
    // (tenant_id, created_at), which read the same runs in the other order. PostgreSQL builds them in the migration's
    // transaction, locking the runs table against writes once, while it does.
    "5_run_list_indexes": Effect.gen(function*() {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      const tail = sql.onDialectOrElse({ pg: () => ", run_id", orElse: () => "" })
      const quote = (name: string) => sql.onDialectOrElse({ pg: () => `"${name}"`, orElse: () => name })
      yield* sql.unsafe(`DROP INDEX IF EXISTS ${quote(`${t.prefix}runs_tenant_created_idx`)}`)
      for (const [name, columns] of RUN_LIST_INDEXES) {
        yield* sql.unsafe(`CREATE INDEX IF NOT EXISTS ${quote(`${t.prefix}${name}`)} ON ${quote(t.runs)} (${columns}, created_at DESC${tail})`)
      }
    }),
    // Hashes and event ids as bytes, and a prev_hash that is the previous event's hash as NULL (see `sqlCodec` and
    // `eventValues`; the README's "Storage format"): a stored event's hashes and id were three quarters of its row.
    "6_compact_chain": Effect.gen(function*() {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      yield* sql.onDialectOrElse({ pg: () => compactChainPg(sql, t), orElse: () => compactChainSqlite(sql, t) })
    }),
    // The version of the code that started each run (issue 19): `list-runs --version`, the count of runs in flight per
    // version. Runs started before it are version "1" (`Workflow.DEFAULT_VERSION`), as their RunStarted says nothing.
    "7_run_version": Effect.gen(function*() {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      yield* SqlMigrations.addColumn(sql, t.runs, "version", { pg: "TEXT NOT NULL DEFAULT '1'", sqlite: "TEXT NOT NULL DEFAULT '1'" })
    }),
    // Forks (issue 19): the run a fork was copied from, so a run's page lists its forks; and a lineage listed in
    // creation order on an index of its own (the lineage's runs, not the tenant's, however many the tenant has).
    "8_run_forks_lineage_order": Effect.gen(function*() {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      yield* SqlMigrations.addColumn(sql, t.runs, "forked_from", { pg: "TEXT", sqlite: "TEXT" })
      const tail = sql.onDialectOrElse({ pg: () => ", run_id", orElse: () => "" })
      const quote = (name: string) => sql.onDialectOrElse({ pg: () => `"${name}"`, orElse: () => name })
      for (const [name, columns] of RUN_LINEAGE_INDEXES) {
        yield* sql.unsafe(`CREATE INDEX IF NOT EXISTS ${quote(`${t.prefix}${name}`)} ON ${quote(t.runs)} (${columns}, created_at DESC${tail})`)
      }
      // The lineage's list index starts with (tenant_id, root_run_id): the index on those two alone is one more to write.
      yield* sql.unsafe(`DROP INDEX IF EXISTS ${quote(`${t.prefix}runs_root_idx`)}`)
    }),
    // PostgreSQL's append statements find a run by its key through an index no other query can use (see `FENCE_INDEX`).
    "9_run_fence_index": Effect.gen(function*() {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      yield* sql.onDialectOrElse({
        pg: () => sql.unsafe(`CREATE INDEX IF NOT EXISTS "${t.prefix}${FENCE_INDEX}" ON "${t.runs}" (tenant_id COLLATE "C", run_id COLLATE "C")`),
        orElse: () => Effect.void
      })
    }),
    // `list-runs --version V` on an index of its own, as every other filter of the list (see `RUN_VERSION_INDEX`).
    "10_run_version_index": Effect.gen(function*() {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      const [name, columns] = RUN_VERSION_INDEX
      const tail = sql.onDialectOrElse({ pg: () => ", run_id", orElse: () => "" })
      const quote = (id: string) => sql.onDialectOrElse({ pg: () => `"${id}"`, orElse: () => id })
      yield* sql.unsafe(`CREATE INDEX IF NOT EXISTS ${quote(`${t.prefix}${name}`)} ON ${quote(t.runs)} (${columns}, created_at DESC${tail})`)
    }),
    // The approvals inbox, longest waiting first: the paused runs alone, by the time they paused (see `ApprovalsIndex`).
    "11_runs_paused_index": Effect.gen(function*() {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      const quote = (id: string) => sql.onDialectOrElse({ pg: () => `"${id}"`, orElse: () => id })
      yield* sql.unsafe(`CREATE INDEX IF NOT EXISTS ${quote(`${t.prefix}runs_paused_idx`)} ON ${quote(t.runs)} (tenant_id, updated_at, run_id) WHERE status = 'paused'`)
    })
  }
}

/**
 * The index `listRuns` pages the runs of one version of the code on (migration 10): name, and the columns before
 * `created_at DESC`. A rare version (the runs a rolling deploy left behind) is found without scanning the tenant's runs.
 */
export const RUN_VERSION_INDEX: readonly [string, string] = ["runs_version_list_idx", "tenant_id, version"]

/**
 * PostgreSQL's index of the append statements' look-up of a run (the fence check, a status change's UPDATE; migration 9):
 * its key, (tenant_id, run_id), in the "C" collation, which those statements compare in (`tenant_id = $n COLLATE "C"`:
 * for text, the same equality as the columns' own collation). No other index of the table is in that collation, so the
 * planner has no other index to choose for them. Without table statistics (a database's first minute, before
 * autovacuum's first ANALYZE) it costed every index that starts with tenant_id the same as the primary key on a small
 * table, picked a run-list index, and each append walked every run of the tenant.
 */
export const FENCE_INDEX = "runs_fence_idx"

/** The indexes `listRuns` pages a lineage and a run's forks on (migration 8): name, and the columns before `created_at DESC`. */
export const RUN_LINEAGE_INDEXES: ReadonlyArray<readonly [string, string]> = [
  ["runs_root_list_idx", "tenant_id, root_run_id"],
  ["runs_forks_list_idx", "tenant_id, forked_from"]
]

/** The indexes `listRuns` pages on (migration 5): name, and the columns before `created_at DESC`. */
export const RUN_LIST_INDEXES: ReadonlyArray<readonly [string, string]> = [
  ["runs_list_idx", "tenant_id"],
  ["runs_status_list_idx", "tenant_id, status"],
  ["runs_workflow_list_idx", "tenant_id, workflow"]
]

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

/**
 * The stored prev_hash of each event of the text schema: NULL when it is the hash of the run's row before it (the
 * genesis hash before the first), else the text (packed by the caller). `e` is the events table's alias.
 */
const prevOrNull = (dialect: "pg" | "sqlite") =>
  `CASE WHEN e.prev_hash = COALESCE(LAG(e.hash) OVER (PARTITION BY e.tenant_id, e.run_id ORDER BY e.seq), '${GENESIS_HASH}') THEN NULL ELSE ${
    Codec.packSql(Codec.HASH, "e.prev_hash", dialect)
  } END`

/**
 * PostgreSQL: the columns change type in place (`ALTER TABLE ... TYPE` rewrites the table once, keeping its key and
 * indexes); the prev_hash that a NULL now stands for is cleared first, which that rewrite then compacts. The tables
 * are locked for as long as that takes, once, when the first process of the new version opens the database.
 */
const compactChainPg = (sql: SqlClient.SqlClient, t: Tables) =>
  Effect.gen(function*() {
    const [column] = yield* sql<{ readonly type: string }>`SELECT data_type AS type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ${t.events} AND column_name = 'hash'`
    if (column?.type === "bytea") return
    for (
      const statement of [
        `ALTER TABLE "${t.events}" ALTER COLUMN prev_hash DROP NOT NULL`,
        `UPDATE "${t.events}" u SET prev_hash = NULL FROM (SELECT e.tenant_id, e.run_id, e.seq, ${prevOrNull("pg")} AS prev FROM "${t.events}" e) p
  WHERE p.prev IS NULL AND u.tenant_id = p.tenant_id AND u.run_id = p.run_id AND u.seq = p.seq`,
        `ALTER TABLE "${t.events}" ALTER COLUMN event_id TYPE BYTEA USING ${Codec.packSql(Codec.UUID, "event_id", "pg")},
  ALTER COLUMN prev_hash TYPE BYTEA USING ${Codec.packSql(Codec.HASH, "prev_hash", "pg")},
  ALTER COLUMN hash TYPE BYTEA USING ${Codec.packSql(Codec.HASH, "hash", "pg")}`,
        `ALTER TABLE "${t.runs}" ALTER COLUMN head_hash TYPE BYTEA USING ${Codec.packSql(Codec.HASH, "head_hash", "pg")}`
      ]
    ) yield* sql.unsafe(statement)
  })

/**
 * SQLite: the events table becomes a rowid table, its key `(tenant_id, run_id, seq)` a unique index. A WITHOUT ROWID
 * table is an index b-tree: a row over about a quarter of a 4 KiB page (a model request with its context) spills to an
 * overflow page of its own, mostly empty, and appends in key order leave its pages half full; measured on an agent's
 * log, that was 1,254 bytes per event for a 306-byte payload (after packing the hashes, still 799). A rowid table
 * keeps rows up to a page in place and fills its pages as it appends: 480 bytes per event, its key index included.
 * A run's read walks the key index and reads its rows by rowid, which are in append order.
 *
 * It is rebuilt as `tenantKeySqlite` rebuilds it (new table, rows copied packed, old one
 * dropped, new one renamed, head trigger made again), in the migration's transaction: a crash leaves the old table
 * whole. Afterwards `VACUUM` gives the freed pages back to the file system (Artana does not run it: it rewrites the
 * whole file, and needs as much free disk).
 */
const compactChainSqlite = (sql: SqlClient.SqlClient, t: Tables) =>
  Effect.gen(function*() {
    const [column] = yield* sql<{ readonly type: string }>`SELECT type FROM pragma_table_info(${t.events}) WHERE name = 'hash'`
    if (column?.type.toUpperCase() === "BLOB") return
    const eventsNew = `${t.prefix}events_v6`
    // Indexes another migration made on the events table (its key's aside) are made again on the new one.
    const indexes = yield* sql<{ readonly sql: string }>`SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ${t.events} AND sql IS NOT NULL`
    for (
      const statement of [
        `DROP TRIGGER IF EXISTS ${t.prefix}events_advance_head`,
        `CREATE TABLE ${eventsNew} (
  run_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  event_id BLOB NOT NULL,
  tenant_id TEXT NOT NULL,
  timestamp INTEGER NOT NULL,
  type TEXT NOT NULL,
  step_key TEXT NOT NULL,
  payload TEXT NOT NULL,
  prev_hash BLOB,
  hash BLOB NOT NULL,
  PRIMARY KEY (tenant_id, run_id, seq),
  FOREIGN KEY (tenant_id, run_id) REFERENCES ${t.runs} (tenant_id, run_id)
)`,
        `INSERT INTO ${eventsNew} (run_id, seq, event_id, tenant_id, timestamp, type, step_key, payload, prev_hash, hash)
  SELECT e.run_id, e.seq, ${Codec.packSql(Codec.UUID, "e.event_id", "sqlite")}, e.tenant_id, e.timestamp, e.type, e.step_key, e.payload, ${prevOrNull("sqlite")}, ${
          Codec.packSql(Codec.HASH, "e.hash", "sqlite")
        } FROM ${t.events} e`,
        `DROP TABLE ${t.events}`,
        `ALTER TABLE ${eventsNew} RENAME TO ${t.events}`,
        `UPDATE ${t.runs} SET head_hash = ${Codec.packSql(Codec.HASH, "head_hash", "sqlite")}`,
        headTriggerSqlite(t),
        ...indexes.map((index) => index.sql)
      ]
    ) yield* sql.unsafe(statement)
  })

/** Creates the tables and indexes if they do not exist yet (idempotent, safe to run concurrently). */
export const migrate = (options: Options = {}): Effect.Effect<void, StoreError | SchemaMismatch, SqlClient.SqlClient> => {
  const t = tables(options)
  // The columns the queries use: a table changed outside Artana is refused on open, not on the first query.
  const columns = {
    [t.runs]: ["run_id", "tenant_id", "workflow", "parent_run_id", "root_run_id", "status", "head_seq", "head_hash", "cost_usd", "created_at", "updated_at", "owner_epoch", "version", "forked_from"],
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
    // SQLite has one writer: appends made together are committed together (`internal/groupCommit.ts`).
    const appendBatch: AppendBatch = dialect !== undefined
      ? dialect.make(t)
      : yield* sql.onDialectOrElse({
        sqlite: () => GroupCommit.make(sql, SqliteAppend.make(sql, t)),
        orElse: () => Effect.succeed(PortableAppend.make(sql, t))
      })

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

    // Only PostgreSQL's errors are `retryable`: on SQLite the hot append is not wrapped in retries it never takes.
    const retries = sql.onDialectOrElse({ sqlite: () => false, orElse: () => true })
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
        const retried = inTransaction || !retries ? batch : retryWhile(batch, retryable, RETRIES)
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

    /**
     * Every batch `next` gives in one transaction, each appended as `append` appends it inside a caller's transaction.
     * Not retried on a serialization failure: `next` is read once (the caller runs it all again).
     */
    const appendPaged = <E>(next: Effect.Effect<Option.Option<AppendRequest>, E>): Effect.Effect<void, SequenceConflict | OwnershipLost | StoreError | E> => {
      const loop: Effect.Effect<void, SequenceConflict | OwnershipLost | StoreError | E> = Effect.flatMap(next, Option.match({
        onNone: () => Effect.void,
        onSome: (request) => Effect.zipRight(append(request), loop)
      }))
      const isSqlError = (error: unknown): error is SqlError => error instanceof SqlError
      return Effect.catchIf(transactionDefects(sql.withTransaction(loop)), isSqlError, (error) => Effect.fail(storeError("appendPaged", error)))
    }

    const runExists = (tenantId: string, runId: string) =>
      Effect.map(
        sql`SELECT 1 AS found FROM ${runs} WHERE run_id = ${runId} AND tenant_id = ${tenantId}`,
        (rows) => rows.length > 0
      )

    const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
    const eventColumns = sql.literal(eventColumnList(pg ? "pg" : "sqlite"))
    // A page from seq N > 1 reads the row before it too: a NULL prev_hash is that row's hash.
    const readEvents = (tenantId: string, runId: string, fromSeq = 1, limit?: number): Effect.Effect<ReadonlyArray<Event>, RunNotFound | StoreError> =>
      Effect.gen(function*() {
        const from = Math.max(1, fromSeq)
        const before = from > 1 ? 1 : 0
        const page = limit === undefined ? sql`` : sql`LIMIT ${Math.max(0, Math.floor(limit)) + before}`
        const rows = yield* sql`SELECT ${eventColumns} FROM ${events} WHERE run_id = ${runId} AND tenant_id = ${tenantId} AND seq >= ${from - before} ORDER BY seq ${page}`.values
        return yield* Effect.suspend(() => {
          const out: Array<Event> = []
          let previousHash = GENESIS_HASH
          let i = 0
          let row: ReadonlyArray<unknown> | undefined
          try {
            // The row before the page: its hash only (its own seq is below `from`; a run whose row there is gone
            // starts the page with the genesis hash, and `Verify` reports the gap).
            if (before === 1 && rows.length > 0 && toNumber(rows[0]![0]) === from - 1) {
              row = rows[0]!
              previousHash = hashOf(row, pg)
              i = 1
            }
            const end = limit === undefined ? rows.length : Math.min(rows.length, i + Math.max(0, Math.floor(limit)))
            for (; i < end; i++) {
              row = rows[i]!
              const event = eventFromValues(runId, tenantId, row, previousHash, pg)
              out.push(event)
              previousHash = event.hash
            }
          } catch (cause) {
            if (!(cause instanceof CorruptRow)) return Effect.die(cause)
            return Effect.fail(
              new StoreError({ operation: "readEvents", reason: `corrupt row (run ${runId} seq ${String(row?.[0])}), column ${cause.column}: ${cause.reason}` })
            )
          }
          return Effect.succeed(out)
        }).pipe(Effect.flatMap((out) =>
          out.length > 0 ? Effect.succeed(out) : Effect.flatMap(runExists(tenantId, runId), (exists) => exists ? Effect.succeed(out) : Effect.fail(new RunNotFound({ runId, tenantId })))
        ))
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
        Effect.withSpan("SqlEventStore.getRun", { attributes: { runId }, captureStackTrace: false })
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
        return `r.run_id, r.tenant_id, r.workflow, r.parent_run_id, r.root_run_id, r.status, r.cost_usd, r.created_at, r.owner_epoch, r.version, r.forked_from, CASE WHEN ${head} THEN h.seq ELSE r.head_seq END AS head_seq, CASE WHEN ${head} THEN h.hash ELSE r.head_hash END AS head_hash, CASE WHEN ${head} THEN h.timestamp ELSE r.updated_at END AS updated_at`
      },
      orElse: () => "r.*"
    }))

    // The tie-breaker of the listing order, as a column of each listed row: the key of a page's cursor.
    const listKey = sql.literal(sql.onDialectOrElse({ sqlite: () => ", r.rowid AS list_key", orElse: () => ", r.run_id AS list_key" }))
    const keyColumn = sql.onDialectOrElse({ sqlite: () => sql`r.rowid`, orElse: () => sql`r.run_id` })

    const listed = (tenantId: string, filter: ListRunsFilter, after: RunCursor.Position | undefined) => {
      const where = [sql`r.tenant_id = ${tenantId}`]
      if (filter.status !== undefined) where.push(sql`r.status = ${filter.status}`)
      if (filter.workflow !== undefined) where.push(sql`r.workflow = ${filter.workflow}`)
      if (filter.version !== undefined) where.push(sql`r.version = ${filter.version}`)
      if (filter.parentRunId !== undefined) where.push(sql`r.parent_run_id = ${filter.parentRunId}`)
      if (filter.rootRunId !== undefined) where.push(sql`r.root_run_id = ${filter.rootRunId}`)
      if (filter.createdSince !== undefined) where.push(sql`r.created_at >= ${filter.createdSince}`)
      if (filter.createdUntil !== undefined) where.push(sql`r.created_at < ${filter.createdUntil}`)
      if (filter.minCostUsd !== undefined) where.push(sql`r.cost_usd >= ${filter.minCostUsd}`)
      if (filter.forkedFrom !== undefined) where.push(sql`r.forked_from = ${filter.forkedFrom}`)
      // After the cursor in (created_at DESC, key ASC): the bound on created_at is the index range, the rest a filter.
      if (after !== undefined) {
        where.push(sql`r.created_at <= ${after.createdAt}`, sql`(r.created_at < ${after.createdAt} OR ${keyColumn} > ${after.key})`)
      }
      const limit = filter.limit === undefined ? sql`` : sql`LIMIT ${Math.max(0, Math.floor(filter.limit))}`
      return sql`SELECT ${runColumns}${listKey} FROM ${runs} r ${runHead} WHERE ${sql.and(where)} ORDER BY r.created_at DESC, ${tieBreak} ${limit}`.pipe(
        Effect.flatMap((rows) =>
          decodeRows("listRuns", rows, (row) => `run ${String(row.run_id)}`, (row) => {
            const info = runFromRow(row)
            const key = row.list_key
            const position: RunCursor.Position = { createdAt: info.createdAt, key: typeof key === "string" ? key : numberValue(key, "rowid") }
            return { info, position }
          })
        ),
        Effect.catchTag("SqlError", (error) => Effect.fail(storeError("listRuns", error)))
      )
    }

    const listRuns = (tenantId: string, filter: ListRunsFilter = {}): Effect.Effect<ReadonlyArray<RunInfo>, StoreError> =>
      listed(tenantId, filter, undefined).pipe(
        Effect.map((rows) => rows.map((r) => r.info)),
        Effect.withSpan("SqlEventStore.listRuns")
      )

    const listRunsPage = (tenantId: string, filter: ListRunsPageFilter = {}): Effect.Effect<RunsPage, StoreError | InvalidInput> =>
      Effect.gen(function*() {
        const keyType = sql.onDialectOrElse({ sqlite: () => "number" as const, orElse: () => "string" as const })
        const after = filter.after === undefined ? undefined : yield* RunCursor.decode(filter.after, keyType)
        // One run more than the page: whether a next page exists, without counting.
        const rows = yield* listed(tenantId, { ...filter, limit: filter.limit === undefined ? undefined : Math.floor(filter.limit) + 1 }, after)
        return pageOf(rows, filter.limit, (r) => r.position, (r) => r.info)
      }).pipe(Effect.withSpan("SqlEventStore.listRunsPage"))

    // One aggregate over the index on (tenant_id, root_run_id): the lineage's runs only, however many the tenant has.
    const lineageCostUsd = (tenantId: string, rootRunId: string): Effect.Effect<number, StoreError> =>
      sql`SELECT COALESCE(SUM(cost_usd), 0) AS spent FROM ${runs} WHERE tenant_id = ${tenantId} AND root_run_id = ${rootRunId}`.pipe(
        Effect.flatMap((rows) => decodeRows("lineageCostUsd", rows, () => `lineage ${rootRunId}`, (row) => num(row, "spent"))),
        Effect.map((sums) => sums[0] ?? 0),
        Effect.catchTag("SqlError", (error) => Effect.fail(storeError("lineageCostUsd", error))),
        Effect.withSpan("SqlEventStore.lineageCostUsd", { attributes: { rootRunId }, captureStackTrace: false })
      )

    // An operator's count (`artana versions`): one scan of the runs, grouped in the database.
    const versionCounts = (filter: VersionCountsFilter = {}): Effect.Effect<ReadonlyArray<VersionCount>, StoreError> => {
      const where = [sql`1 = 1`]
      if (filter.tenantId !== undefined) where.push(sql`tenant_id = ${filter.tenantId}`)
      if (filter.workflow !== undefined) where.push(sql`workflow = ${filter.workflow}`)
      return sql`SELECT workflow, version, COUNT(*) AS runs, SUM(CASE WHEN ${sql.in("status", IN_FLIGHT)} THEN 1 ELSE 0 END) AS in_flight,
  MAX(created_at) AS last_created_at FROM ${runs} WHERE ${sql.and(where)} GROUP BY workflow, version ORDER BY workflow, version`.pipe(
        Effect.flatMap((rows) =>
          decodeRows("versionCounts", rows, (row) => `workflow ${String(row.workflow)}`, (row) => ({
            workflow: text(row, "workflow"),
            version: text(row, "version"),
            // PostgreSQL's COUNT and SUM are bigint and numeric, which come back as text.
            runs: Number(row.runs),
            inFlight: Number(row.in_flight),
            lastCreatedAt: num(row, "last_created_at")
          }))
        ),
        Effect.catchTag("SqlError", (error) => Effect.fail(storeError("versionCounts", error))),
        Effect.withSpan("SqlEventStore.versionCounts")
      )
    }

    return { append, appendAll, readEvents, getRun, listRuns, listRunsPage, lineageCostUsd, appendPaged, versionCounts } satisfies Service
  })

/**
 * The `EventStore` on the `SqlClient` in context.
 *
 * @example
 * const EventStoreLive = SqlEventStore.layer({ tablePrefix: "artana_" }).pipe(Layer.provide(SqliteClient.layer({ filename })))
 */
export const layer = (options: Options = {}): Layer.Layer<EventStore, StoreError | SchemaMismatch, SqlClient.SqlClient> =>
  Layer.effect(EventStore, make(options))
