// The append statements look a run up by its key on a database without table statistics (its first minute, before
// autovacuum's first ANALYZE): PostgreSQL's plans of the statements the store really prepared, read back from the
// connection that ran them, scan the runs table only through an index on exactly (tenant_id, run_id). Before the
// fence index, the planner costed every index that starts with tenant_id the same on a small unanalyzed table and
// picked one of the run-list indexes, so each append's fence check walked every run of the tenant.
import { describe, expect, it } from "@effect/vitest"
import { inject } from "vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { EventStore, Kernel, SqlEventStore, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { PgClient } from "@effect/sql-pg"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"

const pg = PgTest.server(inject("artanaPg"))
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

const echo = Tool.make({
  name: "echo",
  description: "Returns its input",
  parameters: Schema.Struct({ i: Schema.Number }),
  idempotent: true,
  handler: ({ i }) => Effect.succeed(i)
})
const steps = Workflow.make({
  name: "steps",
  input: Schema.Struct({ n: Schema.Number }),
  output: Schema.Number,
  run: ({ n }, ctx) =>
    Effect.gen(function*() {
      for (let i = 0; i < n; i++) yield* ctx.tool(echo, { i })
      return n
    })
})

/** A value of each parameter type the append statements use, as SQL. */
const literal = (type: string): string => {
  switch (type) {
    case "text":
      return "'r1'"
    case "bigint":
    case "integer":
      return "1"
    case "double precision":
      return "0"
    case "bytea":
      return "'\\x00'::bytea"
    default:
      return "NULL"
  }
}

interface PlanNode {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly "Index Name"?: string
  readonly Plans?: ReadonlyArray<PlanNode>
}

/** Every node of a plan that reads `relation` (a scan, not the table an INSERT or UPDATE writes). */
const scansOf = (node: PlanNode, relation: string): Array<PlanNode> => [
  ...(node["Relation Name"] === relation && node["Node Type"] !== "ModifyTable" ? [node] : []),
  ...(node.Plans ?? []).flatMap((child) => scansOf(child, relation))
]

describe.skipIf(pg.url === undefined)(`the fence check's plan on PostgreSQL (${pg.description})`, () => {
  it.scoped("on a database without statistics, every append scans runs through its (tenant_id, run_id) key", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      // One connection: the statements below run on the connection that prepared the appends.
      const client = PostgresStore.layerClient({ url, pool: { max: 1 } })
      const layer = Kernel.layer().pipe(
        Layer.provideMerge(Layer.mergeAll(Layer.effect(EventStore.EventStore, SqlEventStore.make()), ScriptedModel.layer([]), ToolRegistry.layer([echo]))),
        Layer.provideMerge(client)
      )
      const context = yield* Layer.build(layer)
      const kernel = Context.get(context, Kernel.Kernel)
      const sql = Context.get(context, PgClient.PgClient)
      // The state of a database before autovacuum's first ANALYZE, kept for the length of the test.
      yield* sql.unsafe(`ALTER TABLE runs SET (autovacuum_enabled = off)`)
      yield* sql.unsafe(`ALTER TABLE events SET (autovacuum_enabled = off)`)
      for (const runId of ["a", "b", "c"]) yield* kernel.execute(steps, { runId, tenant, input: { n: 3 } })

      const [stats] = yield* sql.unsafe<{ reltuples: number; analyzed: number }>(
        `SELECT (SELECT reltuples FROM pg_class WHERE relname = 'runs')::float8 AS reltuples, (SELECT count(*) FROM pg_stats WHERE tablename = 'runs')::int AS analyzed`
      )
      expect(stats).toEqual({ reltuples: -1, analyzed: 0 })
      // The indexes that find a run by its key alone.
      const keyIndexes = (yield* sql.unsafe<{ name: string }>(
        `SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE i.indrelid = 'runs'::regclass AND i.indnkeyatts = 2
           AND (SELECT array_agg(a.attname::text ORDER BY k.n) FROM unnest(i.indkey[0:1]) WITH ORDINALITY AS k(attnum, n)
                JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum) = ARRAY['tenant_id', 'run_id']`
      )).map((row) => row.name)

      const statements = yield* sql.unsafe<{ name: string; types: ReadonlyArray<string> }>(
        `SELECT name, parameter_types::text[] AS types FROM pg_prepared_statements WHERE name LIKE 'artana_%' ORDER BY name`
      )
      // The store's appends: a new run's, tool events', and the run's end (a status change).
      expect(statements.length).toBeGreaterThanOrEqual(3)
      const scans: Array<PlanNode> = []
      const eventScans: Array<PlanNode> = []
      for (const mode of ["force_generic_plan", "force_custom_plan"]) {
        yield* sql.unsafe(`SET plan_cache_mode = ${mode}`)
        for (const { name, types } of statements) {
          const [row] = yield* sql.unsafe<{ "QUERY PLAN": ReadonlyArray<{ Plan: PlanNode }> }>(
            `EXPLAIN (FORMAT JSON) EXECUTE ${name}(${types.map(literal).join(", ")})`
          )
          scans.push(...scansOf(row!["QUERY PLAN"][0]!.Plan, "runs"))
          eventScans.push(...scansOf(row!["QUERY PLAN"][0]!.Plan, "events"))
        }
      }
      yield* sql.unsafe(`RESET plan_cache_mode`)
      // The fence check of tool events and the status change's UPDATE, in both plan modes.
      expect(scans.length).toBeGreaterThanOrEqual(4)
      for (const scan of scans) {
        expect(scan["Node Type"]).toMatch(/^Index (Only )?Scan$/)
        expect(keyIndexes).toContain(scan["Index Name"])
      }
      // The event before a batch (its link, and no gap) is probed on the events' primary key, in both plan modes.
      expect(eventScans.length).toBeGreaterThanOrEqual(4)
      for (const scan of eventScans) {
        expect(scan["Node Type"]).toMatch(/^Index (Only )?Scan$/)
        expect(scan["Index Name"]).toBe("events_pkey")
      }
    }), { timeout: 60_000 })
})
