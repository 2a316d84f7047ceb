/**
 * The `MemoryStore` written once against `@effect/sql`'s `SqlClient`: SQLite and Postgres run this same code and
 * differ only where `sql.onDialectOrElse` says so (the sequence column, column types, substring search, row
 * locks). The client comes from `@artana/store-sqlite` or `@artana/store-postgres`, whose layers provide it next
 * to the `EventStore`, so memory lives in the same database as the log.
 *
 * @since 0.1.0
 */
import { Errors, SqlErrors, SqlMigrations } from "@artana/core"
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import type { Fragment } from "@effect/sql/Statement"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { AmbiguousMemory, MemoryNotFound } from "./AgentErrors.js"
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

// --- rows ------------------------------------------------------------------------------------------------------

type Row = { readonly [column: string]: unknown }

const corrupt = (operation: string, reason: string) => new Errors.StoreError({ operation, reason: `corrupt memory row: ${reason}` })

/** Drivers return integers as number, bigint (SQLite safe integers) or string (Postgres BIGINT). */
const toNumber = (value: unknown): number | undefined => {
  if (typeof value === "number") return value
  if (typeof value === "bigint") return Number(value)
  if (typeof value === "string" && value.trim() !== "" && !Number.isNaN(Number(value))) return Number(value)
  return undefined
}

const entryOf = (operation: string, row: Row): Effect.Effect<{ readonly entry: MemoryEntry; readonly order: number }, Errors.StoreError> => {
  const order = toNumber(row.seq)
  const createdAt = toNumber(row.created_at)
  const updatedAt = toNumber(row.updated_at)
  const { id, tenant_id, agent_id, content } = row
  if (order === undefined || createdAt === undefined || updatedAt === undefined) return Effect.fail(corrupt(operation, `seq or times of ${String(id)} are not numbers`))
  if (typeof id !== "string" || typeof tenant_id !== "string" || typeof agent_id !== "string" || typeof content !== "string") {
    return Effect.fail(corrupt(operation, `id, tenant_id, agent_id or content of ${String(id)} is not text`))
  }
  return Effect.succeed({ order, entry: { id, tenantId: tenant_id, agentId: agent_id, content, createdAt, updatedAt } })
}

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
    const ops = sql(t.ops)
    const failWith = (operation: string) => (error: SqlError) => Effect.fail(SqlErrors.storeError(operation, error))

    /**
     * Claims an idempotency key inside the transaction: the write that inserts the ledger row does the work; a
     * write whose key is there returns the recorded result. The ledger row is also the transaction's first write,
     * so SQLite takes its write lock before anything is read (a read-then-write transaction could fail with
     * SQLITE_BUSY at its first write when another process wrote in between).
     */
    const claim = (tenantId: string, key: string, now: number) =>
      Effect.gen(function*() {
        const inserted = yield* sql`INSERT INTO ${ops} (tenant_id, op_key, result, created_at) VALUES (${tenantId}, ${key}, ${""}, ${now}) ON CONFLICT (tenant_id, op_key) DO NOTHING RETURNING op_key`
        if (inserted.length > 0) return undefined
        const [row] = yield* sql`SELECT result FROM ${ops} WHERE tenant_id = ${tenantId} AND op_key = ${key}`
        return typeof row?.result === "string" ? row.result : ""
      })

    /**
     * Runs a write once per key, in one transaction, and records its result (`schema`) in the ledger; a write whose
     * key is recorded returns the recorded result. Without a key, a random one: the same code path.
     */
    const once = <A, I, E>(
      operation: string,
      scope: Scope,
      options: WriteOptions,
      schema: Schema.Schema<A, I>,
      write: (now: number) => Effect.Effect<A, E | SqlError>
    ): Effect.Effect<A, E | Errors.StoreError> =>
      Effect.gen(function*() {
        const key = options.key ?? `anonymous:${crypto.randomUUID()}`
        const now = yield* Clock.currentTimeMillis
        const outcome = yield* sql.withTransaction(Effect.gen(function*() {
          const done = yield* claim(scope.tenantId, key, now)
          if (done !== undefined) return { done }
          const result = yield* write(now)
          yield* sql`UPDATE ${ops} SET result = ${JSON.stringify(Schema.encodeSync(schema)(result))} WHERE tenant_id = ${scope.tenantId} AND op_key = ${key}`
          return { result }
        })).pipe(
          SqlErrors.transactionDefects,
          Effect.catchIf((error): error is SqlError => error instanceof SqlError, failWith(operation))
        )
        if ("result" in outcome) return outcome.result
        return yield* Effect.mapError(
          Schema.decodeUnknown(Schema.parseJson(schema))(outcome.done),
          (e) => corrupt(operation, `the result recorded for key ${key}: ${ParseResult.TreeFormatter.formatErrorSync(e)}`)
        )
      })

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
