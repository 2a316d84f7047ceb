/**
 * The `ExperienceStore` written once against `@effect/sql`'s `SqlClient`: SQLite (`@artana/store-sqlite`) and
 * PostgreSQL (`@artana/store-postgres`) provide the client, and this layer shares it with their other stores.
 *
 * A rule's id is derived from its tenant, category and normalized content, so "save" is one upsert per rule
 * (`INSERT ... ON CONFLICT (rule_id) DO UPDATE`, the same statement on both databases), and two processes saving
 * the same rule at once end with one row, counted twice. An idempotency key is recorded in the same transaction
 * as the write it guards.
 *
 * @since 0.1.0
 */
import { Errors, SqlErrors, SqlMigrations } from "@artana/core"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { type ExperienceRule, RuleType } from "./ExperienceRule.js"
import { DEFAULT_LIMIT, ExperienceStore, prepare, RuleNotFound, type Service } from "./ExperienceStore.js"

export interface Options {
  /** Prepended to the table names (`artana_` gives `artana_experience_rules`), as for the other SQL stores. */
  readonly tablePrefix?: string | undefined
}

const tablesOf = (options: Options) => {
  const prefix = SqlMigrations.checkPrefix(options.tablePrefix)
  return { rules: `${prefix}experience_rules`, applied: `${prefix}experience_applied`, prefix }
}

/** The schema: idempotent statements, applied by `SqlMigrations.run`. */
export const migrations = (options: Options = {}): Record<string, SqlMigrations.Migration> => {
  const t = tablesOf(options)
  return {
    "1_experience": Effect.gen(function*() {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      const time = sql.onDialectOrElse({ pg: () => "DOUBLE PRECISION", orElse: () => "INTEGER" })
      yield* sql`CREATE TABLE IF NOT EXISTS ${sql(t.rules)} (
  rule_id TEXT PRIMARY KEY NOT NULL,
  tenant_id TEXT NOT NULL,
  task_category TEXT NOT NULL,
  rule_type TEXT NOT NULL,
  content TEXT NOT NULL,
  normalized TEXT NOT NULL,
  success_count INTEGER NOT NULL,
  fail_count INTEGER NOT NULL,
  created_at ${sql.literal(time)} NOT NULL,
  updated_at ${sql.literal(time)} NOT NULL
)`
      yield* sql`CREATE INDEX IF NOT EXISTS ${sql(`${t.prefix}experience_rules_category_idx`)} ON ${sql(t.rules)} (tenant_id, task_category)`
      yield* sql`CREATE TABLE IF NOT EXISTS ${sql(t.applied)} (
  tenant_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  applied_at ${sql.literal(time)} NOT NULL,
  PRIMARY KEY (tenant_id, idempotency_key)
)`
    })
  }
}

const Row = Schema.Struct({
  rule_id: Schema.String,
  tenant_id: Schema.String,
  task_category: Schema.String,
  rule_type: RuleType,
  content: Schema.String,
  success_count: Schema.Number,
  fail_count: Schema.Number
})
const decodeRows = Schema.decodeUnknown(Schema.Array(Row))

const fromRow = (row: typeof Row.Type): ExperienceRule => ({
  ruleId: row.rule_id,
  tenantId: row.tenant_id,
  taskCategory: row.task_category,
  ruleType: row.rule_type,
  content: row.content,
  successCount: row.success_count,
  failCount: row.fail_count
})

/**
 * Builds the store on the `SqlClient` in context, creating its tables first.
 *
 * @example
 * const store = yield* SqlExperienceStore.make({ tablePrefix: "artana_" })
 */
export const make = (options: Options = {}): Effect.Effect<Service, Errors.StoreError | Errors.SchemaMismatch, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    yield* SqlMigrations.run({ name: "experience", tablePrefix: options.tablePrefix, migrations: migrations(options) })
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const t = tablesOf(options)
    const rulesTable = sql(t.rules)
    const appliedTable = sql(t.applied)

    const failed = (operation: string) => (error: SqlError) => Effect.fail(SqlErrors.storeError(`ExperienceStore.${operation}`, error))
    const read = (operation: string, rows: ReadonlyArray<unknown>) =>
      decodeRows(rows).pipe(
        Effect.map((decoded) => decoded.map(fromRow)),
        Effect.catchTag("ParseError", (error) =>
          Effect.fail(new Errors.StoreError({ operation: `ExperienceStore.${operation}`, reason: `corrupt row: ${error.message}`, cause: error })))
      )

    /** Records `key` for the tenant; true when it was new (the guarded write should happen). A key is each tenant's own. */
    const claimKey = (tenantId: string, key: string | undefined, now: number) =>
      key === undefined
        ? Effect.succeed(true)
        : Effect.map(
          sql`INSERT INTO ${appliedTable} (tenant_id, idempotency_key, applied_at) VALUES (${tenantId}, ${key}, ${now}) ON CONFLICT DO NOTHING RETURNING tenant_id`,
          (inserted) => inserted.length > 0
        )

    const byIds = (tenantIds: ReadonlyArray<string>, ids: ReadonlyArray<string>) =>
      Effect.flatMap(
        sql`SELECT * FROM ${rulesTable} WHERE ${sql.in("rule_id", ids)} AND ${sql.in("tenant_id", [...new Set(tenantIds)])}`,
        (rows) => read("read", rows)
      )

    const saveRules: Service["saveRules"] = (batch, options = {}) =>
      Effect.gen(function*() {
        const prepared = yield* prepare(batch)
        if (prepared.length === 0) return []
        const now = yield* Clock.currentTimeMillis
        const tenantIds = prepared.map((r) => r.tenantId)
        const stored = yield* sql.withTransaction(Effect.gen(function*() {
          const writes = new Set<string>()
          for (const tenantId of new Set(tenantIds)) if (yield* claimKey(tenantId, options.idempotencyKey, now)) writes.add(tenantId)
          for (const rule of prepared) {
            if (writes.has(rule.tenantId)) {
              yield* sql`INSERT INTO ${rulesTable} ${
                sql.insert({
                  rule_id: rule.ruleId,
                  tenant_id: rule.tenantId,
                  task_category: rule.taskCategory,
                  rule_type: rule.ruleType,
                  content: rule.content,
                  normalized: rule.normalized,
                  success_count: 0,
                  fail_count: 0,
                  created_at: now,
                  updated_at: now
                })
              } ON CONFLICT (rule_id) DO UPDATE SET success_count = ${rulesTable}.success_count + 1, updated_at = ${now}`
            }
          }
          return yield* byIds(tenantIds, prepared.map((r) => r.ruleId))
        })).pipe(SqlErrors.transactionDefects, Effect.catchTag("SqlError", failed("saveRules")))
        const byId = new Map(stored.map((r) => [r.ruleId, r]))
        // A rule its tenant's key skipped and that was never stored (the key was used for other rules) is not returned.
        return prepared.flatMap((r) => {
          const rule = byId.get(r.ruleId)
          return rule === undefined ? [] : [rule]
        })
      }).pipe(Effect.withSpan("SqlExperienceStore.saveRules"))

    const getRules: Service["getRules"] = (tenantId, taskCategory, limit = DEFAULT_LIMIT) =>
      sql`SELECT * FROM ${rulesTable} WHERE tenant_id = ${tenantId} AND task_category = ${taskCategory}
ORDER BY (success_count - fail_count) DESC, success_count DESC, rule_id ASC LIMIT ${Math.max(0, Math.floor(limit))}`.pipe(
        Effect.flatMap((rows) => read("getRules", rows)),
        Effect.catchTag("SqlError", failed("getRules")),
        Effect.withSpan("SqlExperienceStore.getRules", { attributes: { tenantId, taskCategory } })
      )

    const reinforce: Service["reinforce"] = (tenantId, ruleId, positive, options = {}) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const column = sql.literal(positive ? "success_count" : "fail_count")
        const rows = yield* sql.withTransaction(Effect.gen(function*() {
          // The tenant is in every statement: another tenant's id matches no row, and its key is not consumed. The
          // first statement writes, so SQLite takes its write lock before reading.
          const found = yield* sql`UPDATE ${rulesTable} SET updated_at = updated_at WHERE rule_id = ${ruleId} AND tenant_id = ${tenantId} RETURNING rule_id`
          if (found.length === 0) return []
          if (yield* claimKey(tenantId, options.idempotencyKey, now)) {
            yield* sql`UPDATE ${rulesTable} SET ${column} = ${column} + 1, updated_at = ${now} WHERE rule_id = ${ruleId} AND tenant_id = ${tenantId}`
          }
          return yield* byIds([tenantId], [ruleId])
        })).pipe(SqlErrors.transactionDefects, Effect.catchTag("SqlError", failed("reinforce")))
        const [rule] = rows
        if (rule === undefined) return yield* new RuleNotFound({ tenantId, ruleId })
        return rule
      }).pipe(Effect.withSpan("SqlExperienceStore.reinforce", { attributes: { tenantId, ruleId, positive } }))

    return { saveRules, getRules, reinforce }
  })

/**
 * The `ExperienceStore` on the `SqlClient` in context.
 *
 * @example
 * const ExperienceLive = SqlExperienceStore.layer().pipe(Layer.provide(SqliteStore.layer({ filename: "artana.db" })))
 */
export const layer = (options: Options = {}): Layer.Layer<ExperienceStore, Errors.StoreError | Errors.SchemaMismatch, SqlClient.SqlClient> =>
  Layer.effect(ExperienceStore, make(options))
