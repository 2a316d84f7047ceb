/**
 * The SQL event store's schema, as the migrations that made it, in order (`SqlEventStore.migrations` keys them). Every
 * statement is idempotent (`IF NOT EXISTS`), so two processes opening one database at once both succeed; a later change
 * is a new entry, written to be idempotent in the same way. The rebuilds of migrations 3, 6 and 12 are in
 * `sqlEventStoreRebuilds.ts`.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as SqlMigrations from "../SqlMigrations.js"
import { CONFLICT, type Tables } from "./sqlAppend.js"
import { compactChainPg, compactChainSqlite, runKeyPg, tenantKeyPg, tenantKeySqlite } from "./sqlEventStoreRebuilds.js"

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
/** The approvals inbox's index of paused runs by the time they paused (see `ApprovalsIndex`), without its prefix. */
export const PAUSED_INDEX = "runs_paused_at_idx"

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

// The tables, their indexes, and the head trigger (which PostgreSQL drops again in migration 2).
const createTables = (t: Tables): SqlMigrations.Migration =>
  Effect.gen(function*() {
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
  })

// PostgreSQL appends move the head in the statement that inserts the events (a data-modifying CTE, see `appendPg` in
// `@artana/store-postgres`), so the head trigger and the foreign key (whose check locks the run's row for every event)
// go. SQLite keeps both: it has no data-modifying CTE, and its checks cost little.
const headInStatement = (t: Tables): SqlMigrations.Migration =>
  Effect.gen(function*() {
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
  })

// Tenancy is a key: a run is (tenant_id, run_id), an event (tenant_id, run_id, seq), so the same run id in two
// tenants is two runs. Lineage (parent and root run ids) is within a tenant, and its indexes lead with it.
const tenantRunKey = (t: Tables): SqlMigrations.Migration =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    yield* sql.onDialectOrElse({ pg: () => tenantKeyPg(sql, t), orElse: () => tenantKeySqlite(sql, t) })
  })

// The run's owner epoch (fencing token): every execution that claims the run raises it, and an append by an
// owner older than the newest is refused in the statement that would write it (see `fenceOf`). Existing runs
// start at 0, as if no execution had claimed them yet.
const ownerEpoch = (t: Tables): SqlMigrations.Migration =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    yield* SqlMigrations.addColumn(sql, t.runs, "owner_epoch", { pg: "BIGINT NOT NULL DEFAULT 0", sqlite: "INTEGER NOT NULL DEFAULT 0" })
  })

// `listRuns` at a year's scale: one index per filter a person lists by (the tenant alone, its runs of a status, of
// a workflow), each in the order runs are listed (newest first, ties in the store's order: SQLite's rowid, which
// every SQLite index ends with, PostgreSQL's run id, its last column here), so a page is a range scan that stops
// after `limit` rows, a time filter bounds the range, and a cursor seeks into it. They replace the index on
// (tenant_id, created_at), which read the same runs in the other order. PostgreSQL builds them in the migration's
// transaction, locking the runs table against writes once, while it does.
const runListIndexes = (t: Tables): SqlMigrations.Migration =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const tail = sql.onDialectOrElse({ pg: () => ", run_id", orElse: () => "" })
    const quote = (name: string) => sql.onDialectOrElse({ pg: () => `"${name}"`, orElse: () => name })
    yield* sql.unsafe(`DROP INDEX IF EXISTS ${quote(`${t.prefix}runs_tenant_created_idx`)}`)
    for (const [name, columns] of RUN_LIST_INDEXES) {
      yield* sql.unsafe(`CREATE INDEX IF NOT EXISTS ${quote(`${t.prefix}${name}`)} ON ${quote(t.runs)} (${columns}, created_at DESC${tail})`)
    }
  })

// Hashes and event ids as bytes, and a prev_hash that is the previous event's hash as NULL (see `sqlCodec` and
// `eventValues`; the README's "Storage format"): a stored event's hashes and id were three quarters of its row.
const compactChain = (t: Tables): SqlMigrations.Migration =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    yield* sql.onDialectOrElse({ pg: () => compactChainPg(sql, t), orElse: () => compactChainSqlite(sql, t) })
  })

// The version of the code that started each run (issue 19): `list-runs --version`, the count of runs in flight per
// version. Runs started before it are version "1" (`Workflow.DEFAULT_VERSION`), as their RunStarted says nothing.
const runVersion = (t: Tables): SqlMigrations.Migration =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    yield* SqlMigrations.addColumn(sql, t.runs, "version", { pg: "TEXT NOT NULL DEFAULT '1'", sqlite: "TEXT NOT NULL DEFAULT '1'" })
  })

// Forks (issue 19): the run a fork was copied from, so a run's page lists its forks; and a lineage listed in
// creation order on an index of its own (the lineage's runs, not the tenant's, however many the tenant has).
const runForksLineageOrder = (t: Tables): SqlMigrations.Migration =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    yield* SqlMigrations.addColumn(sql, t.runs, "forked_from", { pg: "TEXT", sqlite: "TEXT" })
    const tail = sql.onDialectOrElse({ pg: () => ", run_id", orElse: () => "" })
    const quote = (name: string) => sql.onDialectOrElse({ pg: () => `"${name}"`, orElse: () => name })
    for (const [name, columns] of RUN_LINEAGE_INDEXES) {
      yield* sql.unsafe(`CREATE INDEX IF NOT EXISTS ${quote(`${t.prefix}${name}`)} ON ${quote(t.runs)} (${columns}, created_at DESC${tail})`)
    }
    // The lineage's list index starts with (tenant_id, root_run_id): the index on those two alone is one more to write.
    yield* sql.unsafe(`DROP INDEX IF EXISTS ${quote(`${t.prefix}runs_root_idx`)}`)
  })

// PostgreSQL's append statements find a run by its key through an index no other query can use (see `FENCE_INDEX`).
const runFenceIndex = (t: Tables): SqlMigrations.Migration =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    yield* sql.onDialectOrElse({
      pg: () => sql.unsafe(`CREATE INDEX IF NOT EXISTS "${t.prefix}${FENCE_INDEX}" ON "${t.runs}" (tenant_id COLLATE "C", run_id COLLATE "C")`),
      orElse: () => Effect.void
    })
  })

// `list-runs --version V` on an index of its own, as every other filter of the list (see `RUN_VERSION_INDEX`).
const runVersionIndex = (t: Tables): SqlMigrations.Migration =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const [name, columns] = RUN_VERSION_INDEX
    const tail = sql.onDialectOrElse({ pg: () => ", run_id", orElse: () => "" })
    const quote = (id: string) => sql.onDialectOrElse({ pg: () => `"${id}"`, orElse: () => id })
    yield* sql.unsafe(`CREATE INDEX IF NOT EXISTS ${quote(`${t.prefix}${name}`)} ON ${quote(t.runs)} (${columns}, created_at DESC${tail})`)
  })

// The approvals inbox, longest waiting first: the paused runs alone, by the time they paused (see `ApprovalsIndex`).
const runsPausedIndex = (t: Tables): SqlMigrations.Migration =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const quote = (id: string) => sql.onDialectOrElse({ pg: () => `"${id}"`, orElse: () => id })
    yield* sql.unsafe(`CREATE INDEX IF NOT EXISTS ${quote(`${t.prefix}runs_paused_idx`)} ON ${quote(t.runs)} (tenant_id, updated_at, run_id) WHERE status = 'paused'`)
  })

// PostgreSQL's events keyed by a run's surrogate key, without their type, in eight columns (see `runKeyPg`). SQLite
// keeps its layout: it stores an event in fewer bytes already (its rows carry no fixed header, and its integers are
// as long as their values).
const postgresRunKey = (t: Tables): SqlMigrations.Migration =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    yield* sql.onDialectOrElse({ pg: () => runKeyPg(sql, t), orElse: () => Effect.void })
  })

// The inbox's order is the time a run paused, not its head's time: a signal sent to a paused run moves its head (and
// `updated_at`) but not its place in the inbox. `paused_at` is written by the batch that pauses the run; the runs
// paused before this migration get their head's time, which is what the index held for them.
const runsPausedAt = (t: Tables): SqlMigrations.Migration =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const quote = (id: string) => sql.onDialectOrElse({ pg: () => `"${id}"`, orElse: () => id })
    yield* SqlMigrations.addColumn(sql, t.runs, "paused_at", { pg: "DOUBLE PRECISION", sqlite: "INTEGER" })
    yield* sql.unsafe(`UPDATE ${quote(t.runs)} SET paused_at = updated_at WHERE status = 'paused'`)
    yield* sql.unsafe(`DROP INDEX IF EXISTS ${quote(`${t.prefix}runs_paused_idx`)}`)
    yield* sql.unsafe(`CREATE INDEX IF NOT EXISTS ${quote(`${t.prefix}${PAUSED_INDEX}`)} ON ${quote(t.runs)} (tenant_id, paused_at, run_id) WHERE status = 'paused'`)
  })

/** The table of the budget's holds (`BudgetHolds`), after the store's prefix. */
export const HOLDS_TABLE = "budget_holds"

// The estimates of model calls in flight, held where every process on the store sees them (see `BudgetHolds`): keyed
// by tenant and hold, found by lineage; `call_id` names the call (a call made again replaces its hold). `expires_at`
// (ms) lets a hold a dead process left lapse.
const budgetHolds = (t: Tables): SqlMigrations.Migration =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const quote = (id: string) => sql.onDialectOrElse({ pg: () => `"${id}"`, orElse: () => id })
    const real = sql.onDialectOrElse({ pg: () => "DOUBLE PRECISION", orElse: () => "REAL" })
    const table = quote(`${t.prefix}${HOLDS_TABLE}`)
    yield* sql.unsafe(`CREATE TABLE IF NOT EXISTS ${table} (
  tenant_id TEXT NOT NULL,
  hold_id TEXT NOT NULL,
  call_id TEXT,
  root_run_id TEXT NOT NULL,
  usd ${real} NOT NULL,
  expires_at ${real} NOT NULL,
  PRIMARY KEY (tenant_id, hold_id)
)`)
    yield* sql.unsafe(`CREATE INDEX IF NOT EXISTS ${quote(`${t.prefix}${HOLDS_TABLE}_lineage_idx`)} ON ${table} (tenant_id, root_run_id)`)
  })

// `call_id` for a table made before it had one (a database opened by a build of the day it came in).
const budgetHoldsCall = (t: Tables): SqlMigrations.Migration =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    yield* SqlMigrations.addColumn(sql, `${t.prefix}${HOLDS_TABLE}`, "call_id", { pg: "TEXT", sqlite: "TEXT" })
  })

/** The migrations of the store's tables `t`, keyed `<id>_<name>` (see `SqlEventStore.migrations`). */
export const migrations = (t: Tables): Record<string, SqlMigrations.Migration> => ({
  "1_event_store": createTables(t),
  "2_postgres_head_in_statement": headInStatement(t),
  "3_tenant_run_key": tenantRunKey(t),
  "4_owner_epoch": ownerEpoch(t),
  "5_run_list_indexes": runListIndexes(t),
  "6_compact_chain": compactChain(t),
  "7_run_version": runVersion(t),
  "8_run_forks_lineage_order": runForksLineageOrder(t),
  "9_run_fence_index": runFenceIndex(t),
  "10_run_version_index": runVersionIndex(t),
  "11_runs_paused_index": runsPausedIndex(t),
  "12_postgres_run_key": postgresRunKey(t),
  "13_runs_paused_at": runsPausedAt(t),
  "14_budget_holds": budgetHolds(t),
  "15_budget_holds_call": budgetHoldsCall(t)
})
