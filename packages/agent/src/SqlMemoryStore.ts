/**
 * The `MemoryStore` written once against `@effect/sql`'s `SqlClient`: SQLite and Postgres run this same code and
 * differ only where `sql.onDialectOrElse` says so (the sequence column, column types, substring search, row
 * locks). The client comes from `@artana/store-sqlite` or `@artana/store-postgres`, whose layers provide it next
 * to the `EventStore`, so memory lives in the same database as the log.
 *
 * @since 0.1.0
 */
import { type Errors, SqlErrors, SqlMigrations } from "@artana/core"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { Fragment } from "@effect/sql/Statement"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { AmbiguousMemory, MemoryNotFound } from "./AgentErrors.js"
import * as Ledger from "./internal/memoryLedger.js"
import { entryOf } from "./internal/memoryRows.js"
import {
  DEFAULT_SEARCH_LIMIT,
  MemoryEntry,
  MemoryStore,
  queryTerms,
  rank,
  ReplaceResult,
  replaceIn,
  type Scope,
  searchText,
  type Service,
  type WriteOptions
} from "./MemoryStore.js"

/** Options of the SQL memory store. */
export interface Options {
  /** Prepended to every table and index name (`artana_` gives `artana_memory_entries`), as for the event store. */
  readonly tablePrefix?: string | undefined
}

interface Tables {
  readonly entries: string
  readonly ops: string
  readonly prefix: string
}

const tables = (options: Options): Tables => {
  const prefix = SqlMigrations.checkPrefix(options.tablePrefix)
  return { entries: `${prefix}memory_entries`, ops: `${prefix}memory_ops`, prefix }
}

/** How many matching rows a search ranks at most (the most recent ones). */
const SEARCH_CANDIDATES = 1000

/**
 * The schema, keyed `<id>_<name>`; every statement is idempotent (`IF NOT EXISTS`). `SqlMigrations.run` applies
 * them (once per database on Postgres, with a ledger).
 */
export const migrations = (options: Options = {}): Record<string, SqlMigrations.Migration> => {
  const t = tables(options)
  return {
    "1_memory": Effect.gen(function*() {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      // `seq` orders entries in insertion order, whatever the clock says: an identity column on each dialect.
      const types = sql.onDialectOrElse({
        pg: () => ({ seq: "BIGSERIAL PRIMARY KEY", time: "DOUBLE PRECISION" }),
        orElse: () => ({ seq: "INTEGER PRIMARY KEY AUTOINCREMENT", time: "INTEGER" })
      })
      yield* sql`CREATE TABLE IF NOT EXISTS ${sql(t.entries)} (
  seq ${sql.literal(types.seq)},
  id TEXT NOT NULL UNIQUE,
  tenant_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  content TEXT NOT NULL,
  search_text TEXT NOT NULL,
  created_at ${sql.literal(types.time)} NOT NULL,
  updated_at ${sql.literal(types.time)} NOT NULL
)`
      yield* sql`CREATE INDEX IF NOT EXISTS ${sql(`${t.prefix}memory_entries_scope_idx`)} ON ${sql(t.entries)} (tenant_id, agent_id, seq)`
      // The ledger of idempotent writes: a write with a key records its result in the same transaction.
      yield* sql`CREATE TABLE IF NOT EXISTS ${sql(t.ops)} (
  tenant_id TEXT NOT NULL,
  op_key TEXT NOT NULL,
  result TEXT NOT NULL,
  created_at ${sql.literal(types.time)} NOT NULL,
  PRIMARY KEY (tenant_id, op_key)
)`
    })
  }
}

/** Creates the tables if they do not exist yet (idempotent, safe to run concurrently). */
export const migrate = (options: Options = {}): Effect.Effect<void, Errors.StoreError | Errors.SchemaMismatch, SqlClient.SqlClient> =>
  SqlMigrations.run({ name: "memory", tablePrefix: options.tablePrefix, migrations: migrations(options) })

/** Terms are letters and digits only (`queryTerms`), so a term never holds a LIKE wildcard to escape. */
const likePattern = (term: string) => `%${term}%`

// --- the store -----------------------------------------------------------------------------------------------

/**
 * Builds the store on the `SqlClient` in context, creating its tables first.
 *
 * @example
 * const memory = yield* SqlMemoryStore.make({ tablePrefix: "artana_" })
 */
export const make = (options: Options = {}): Effect.Effect<Service, Errors.StoreError | Errors.SchemaMismatch, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    yield* migrate(options)
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const t = tables(options)
    const entries = sql(t.entries)
    const once = Ledger.make(sql, t.ops)
    const failWith = (operation: string) => (error: SqlError) => Effect.fail(SqlErrors.storeError(operation, error))

    const append = (scope: Scope, content: string, options: WriteOptions = {}): Effect.Effect<MemoryEntry, Errors.StoreError> =>
      once<MemoryEntry, typeof MemoryEntry.Encoded, never>("memory append", scope, options, MemoryEntry, (now) =>
        Effect.gen(function*() {
          const entry: MemoryEntry = { id: crypto.randomUUID(), tenantId: scope.tenantId, agentId: scope.agentId, content, createdAt: now, updatedAt: now }
          yield* sql`INSERT INTO ${entries} ${sql.insert({
            id: entry.id,
            tenant_id: entry.tenantId,
            agent_id: entry.agentId,
            content,
            search_text: searchText(content),
            created_at: now,
            updated_at: now
          })}`
          return entry
        })).pipe(
        Effect.withSpan("SqlMemoryStore.append")
      )

    // Postgres locks the rows it will change; SQLite's transaction already holds the database's write lock.
    const forUpdate = sql.onDialectOrElse({ pg: () => sql`FOR UPDATE`, orElse: () => sql`` })
    // Exact, case-sensitive substring: strpos on Postgres, instr on SQLite.
    const contains = (text: string) =>
      sql.onDialectOrElse({ pg: () => sql`strpos(content, ${text}) > 0`, orElse: () => sql`instr(content, ${text}) > 0` })

    const replace = (
      scope: Scope,
      oldText: string,
      newText: string,
      options: WriteOptions = {}
    ): Effect.Effect<ReplaceResult, MemoryNotFound | AmbiguousMemory | Errors.StoreError> =>
      once<ReplaceResult, typeof ReplaceResult.Encoded, MemoryNotFound | AmbiguousMemory | Errors.StoreError>("memory replace", scope, options, ReplaceResult, (now) =>
        Effect.gen(function*() {
          const rows = oldText === ""
            ? []
            : yield* sql`SELECT * FROM ${entries} WHERE tenant_id = ${scope.tenantId} AND agent_id = ${scope.agentId} AND ${contains(oldText)} ORDER BY seq LIMIT 2 ${forUpdate}`
          if (rows.length === 0) return yield* new MemoryNotFound({ agentId: scope.agentId, text: oldText })
          if (rows.length > 1) {
            const [count] = yield* sql`SELECT count(*) AS n FROM ${entries} WHERE tenant_id = ${scope.tenantId} AND agent_id = ${scope.agentId} AND ${contains(oldText)}`
            return yield* new AmbiguousMemory({ agentId: scope.agentId, text: oldText, matches: Number(count?.n ?? rows.length) })
          }
          const { entry: before } = yield* entryOf("memory replace", rows[0]!)
          const content = replaceIn(before.content, oldText, newText)
          const entry: MemoryEntry = { ...before, content, updatedAt: now }
          const removed = content.trim() === ""
          if (removed) yield* sql`DELETE FROM ${entries} WHERE id = ${before.id}`
          else yield* sql`UPDATE ${entries} SET content = ${content}, search_text = ${searchText(content)}, updated_at = ${now} WHERE id = ${before.id}`
          return { entry, removed } satisfies ReplaceResult
        })).pipe(
        Effect.withSpan("SqlMemoryStore.replace")
      )

    const search = (scope: Scope, query: string, options: { readonly limit?: number | undefined } = {}) =>
      Effect.gen(function*() {
        const terms = queryTerms(query)
        const where: Array<Fragment> = [sql`tenant_id = ${scope.tenantId}`, sql`agent_id = ${scope.agentId}`]
        if (terms.length > 0) where.push(sql.or(terms.map((term) => sql`search_text LIKE ${likePattern(term)}`)))
        const rows = yield* sql`SELECT * FROM ${entries} WHERE ${sql.and(where)} ORDER BY seq DESC LIMIT ${SEARCH_CANDIDATES}`
        const candidates = yield* Effect.forEach(rows, (row) => entryOf("memory search", row))
        return rank(candidates, query, options.limit ?? DEFAULT_SEARCH_LIMIT)
      }).pipe(Effect.catchTag("SqlError", failWith("memory search")), Effect.withSpan("SqlMemoryStore.search"))

    const list = (scope: Scope) =>
      sql`SELECT * FROM ${entries} WHERE tenant_id = ${scope.tenantId} AND agent_id = ${scope.agentId} ORDER BY seq`.pipe(
        Effect.flatMap((rows) => Effect.forEach(rows, (row) => Effect.map(entryOf("memory list", row), (e) => e.entry))),
        Effect.catchTag("SqlError", failWith("memory list")),
        Effect.withSpan("SqlMemoryStore.list")
      )

    return { append, replace, search, list } satisfies Service
  })

/**
 * The `MemoryStore` on the `SqlClient` in context: with `SqliteStore.layer` or `PostgresStore.layer` underneath,
 * memory shares the database (and the connection or pool) of the event log.
 *
 * @example
 * const Live = SqlMemoryStore.layer().pipe(Layer.provideMerge(SqliteStore.layer({ filename: "artana.db" })))
 */
export const layer = (options: Options = {}): Layer.Layer<MemoryStore, Errors.StoreError | Errors.SchemaMismatch, SqlClient.SqlClient> =>
  Layer.effect(MemoryStore, make(options))
