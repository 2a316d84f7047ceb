/**
 * What the SQL event store's tables need rebuilt or changed in place when their layout changes: the tenant key
 * (migration 3) and the compact chain (migration 6), per dialect. PostgreSQL changes its tables in place; SQLite,
 * which cannot alter a key or a column's type, copies them into new ones (its documented procedure).
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { GENESIS_HASH } from "./hash.js"
import { CONFLICT, type Tables } from "./sqlAppend.js"
import * as Codec from "./sqlCodec.js"

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
export const tenantKeyPg = (sql: SqlClient.SqlClient, t: Tables) =>
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
export const tenantKeySqlite = (sql: SqlClient.SqlClient, t: Tables) =>
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
export const compactChainPg = (sql: SqlClient.SqlClient, t: Tables) =>
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
export const compactChainSqlite = (sql: SqlClient.SqlClient, t: Tables) =>
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

/**
 * PostgreSQL's events in 240 bytes for a 93-byte payload (issue 15; the store-postgres README's "Bytes per event"):
 * each run gets a surrogate key, `run_key` (a bigint the runs table draws from an identity sequence), and the events
 * table is copied into one of eight columns, in this order: `run_key`, `timestamp`, `seq` (an integer, 4 bytes, after
 * the 8-byte timestamp so no alignment padding follows it), `event_id`, `step_key`, `payload`, `prev_hash`, `hash`,
 * keyed `(run_key, seq)`. An event's type is its payload's `_tag` (an append refuses an event whose type is not), so it
 * is not stored twice. Eight columns keep a row's null bitmap inside its 24-byte header. `ALTER TABLE ... DROP COLUMN`
 * would keep the dropped columns in every row's null bitmap: the table is copied into a new one, in key order, the
 * old one dropped and the new one renamed, in the migration's transaction (a crash leaves the old table whole). Any
 * other index of the old table (one a person made) goes with it: its columns are gone. An event whose run has no row
 * (which no append writes: a new run's row and first events are one statement) fails the migration, naming the count.
 */
export const runKeyPg = (sql: SqlClient.SqlClient, t: Tables) =>
  Effect.gen(function*() {
    const [done] = yield* sql`SELECT 1 AS found FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ${t.runs} AND column_name = 'run_key'`
    if (done !== undefined) return
    const copy = `${t.events}_v12`
    for (
      const statement of [
        `ALTER TABLE "${t.runs}" ADD COLUMN run_key BIGINT GENERATED ALWAYS AS IDENTITY`,
        `CREATE TABLE "${copy}" (
  run_key BIGINT NOT NULL,
  timestamp DOUBLE PRECISION NOT NULL,
  seq INTEGER NOT NULL,
  event_id BYTEA NOT NULL,
  step_key TEXT NOT NULL,
  payload TEXT NOT NULL,
  prev_hash BYTEA,
  hash BYTEA NOT NULL
)`,
        `INSERT INTO "${copy}" (run_key, timestamp, seq, event_id, step_key, payload, prev_hash, hash)
  SELECT r.run_key, e.timestamp, e.seq, e.event_id, e.step_key, e.payload, e.prev_hash, e.hash
  FROM "${t.events}" e JOIN "${t.runs}" r ON r.tenant_id = e.tenant_id AND r.run_id = e.run_id ORDER BY r.run_key, e.seq`,
        `DO $artana$ DECLARE orphans bigint; BEGIN
  SELECT (SELECT count(*) FROM "${t.events}") - (SELECT count(*) FROM "${copy}") INTO orphans;
  IF orphans <> 0 THEN
    RAISE EXCEPTION 'artana: % events of table ${t.events} belong to no run of table ${t.runs}: restore their runs'' rows (or delete the events) and open the store again', orphans;
  END IF;
END $artana$`,
        `DROP TABLE "${t.events}"`,
        `ALTER TABLE "${copy}" RENAME TO "${t.events}"`,
        `ALTER TABLE "${t.events}" ADD CONSTRAINT "${t.events}_pkey" PRIMARY KEY (run_key, seq)`
      ]
    ) yield* sql.unsafe(statement)
  })
