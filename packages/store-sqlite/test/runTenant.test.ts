// A run is its tenant's. A log a store holds from before stores refused it (`EventStore.invalidBatch` now does), whose
// `RunStarted` names another tenant, is not resumed for that tenant: the kernel fails with `LogTampered` and writes
// nothing, to this run or to the other tenant's run of the same id. (Found in review: the kernel took the logged
// tenant, ran a tool with its capabilities and appended to its run.)
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "@effect/sql"
import { EventStore, Kernel, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel, TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const dirs: Array<string> = []
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})
const tempDb = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "artana-run-tenant-"))
  dirs.push(dir)
  return path.join(dir, "artana.db")
}

const globex = Tenant.TenantContext.make({ tenantId: "globex", capabilities: ["admin"], budgetUsdLimit: 1 })

const ran: Array<string> = []
const wipe = Tool.make({
  name: "wipe",
  description: "An admin's tool",
  parameters: Schema.Struct({}),
  requiresCapability: "admin",
  handler: (_args, ctx) => Effect.sync(() => ran.push(ctx.tenant.tenantId))
})
const job = Workflow.make({ name: "job", input: Schema.Null, output: Schema.Unknown, run: (_i, ctx) => ctx.tool(wipe, {}) })

/** A kernel over a new SQLite file, with its store and the file's SQL client (to write rows as an older store did). */
const opened = Effect.suspend(() => Effect.map(
  Layer.build(Layer.provideMerge(
    Kernel.layer({ workflows: [job] }),
    Layer.mergeAll(SqliteStore.layer({ filename: tempDb() }), ScriptedModel.layer([]), ToolRegistry.layer([wipe]))
  )),
  (context) => ({ store: Context.get(context, EventStore.EventStore), sql: Context.get(context, SqlClient.SqlClient), kernel: Context.get(context, Kernel.Kernel) })
))

describe("a run whose RunStarted names another tenant", () => {
  it.scoped("is refused as tampered when resumed: no tool runs, nothing is written to either tenant's run", () =>
    Effect.gen(function*() {
      const { kernel, sql, store } = yield* opened
      // globex's own run "r", started; then acme's run "r", as an older Artana let it be written: a valid chain whose
      // RunStarted names globex (stores refuse that batch now, so it is written row by row).
      yield* store.append({ runId: "r", tenantId: "globex", expectedSeq: 0, events: TestLog.chain("r", "globex", [], [{ _tag: "RunStarted", workflow: "other", input: null, tenant: globex }]) })
      const crafted = TestLog.chain("r", "acme", [], [{ _tag: "RunStarted", workflow: "job", input: null, tenant: globex }])
      yield* sql`INSERT INTO runs (run_id, tenant_id, workflow, root_run_id, status, head_seq, head_hash, cost_usd, created_at, updated_at) VALUES ('r', 'acme', 'job', 'r', 'running', 0, ${crafted[0]!.prevHash}, 0, 0, 0)`
      for (const e of crafted) {
        yield* sql`INSERT INTO events (run_id, seq, event_id, tenant_id, timestamp, type, step_key, payload, prev_hash, hash) VALUES (${e.runId}, ${e.seq}, ${e.eventId}, ${e.tenantId}, ${e.timestamp}, ${e.type}, ${e.stepKey}, ${JSON.stringify(e.payload)}, ${e.prevHash}, ${e.hash})`
      }
      expect((yield* kernel.verify({ tenantId: "acme", runId: "r" })).ok).toBe(true)
      const globexBefore = yield* store.readEvents("globex", "r")

      const resumed = yield* Effect.flip(kernel.resume({ tenantId: "acme", runId: "r", workflow: job }))
      expect(resumed).toMatchObject({ _tag: "LogTampered", runId: "r" })
      expect(resumed.message).toContain("the run of tenant acme starts for tenant globex")
      expect(ran).toEqual([])
      expect(yield* store.readEvents("globex", "r")).toEqual(globexBefore)
      const acmeTypes = (yield* store.readEvents("acme", "r")).map((e) => e.type)
      expect(acmeTypes.filter((t) => t !== "RunStarted" && t !== "RunResumed")).toEqual([])
    }))

  it.scoped("is refused as tampered when reconciled too: nothing is written to the other tenant's run (found in review)", () =>
    Effect.gen(function*() {
      const { kernel, sql, store } = yield* opened
      // globex's own run "r": three events.
      yield* store.append({
        runId: "r", tenantId: "globex", expectedSeq: 0,
        events: TestLog.chain("r", "globex", [], [
          { _tag: "RunStarted", workflow: "other", input: null, tenant: globex },
          { _tag: "StepCompleted", name: "a", value: 1 },
          { _tag: "StepCompleted", name: "b", value: 2 }
        ])
      })
      // acme's run "r", in doubt, written by an older Artana: its RunStarted names globex.
      const crafted = TestLog.chain("r", "acme", [], [
        { _tag: "RunStarted", workflow: "job", input: null, tenant: globex },
        { _tag: "ToolRequested", tool: "wipe", arguments: "{}", idempotencyKey: "k" },
        { _tag: "ReconciliationRequired", tool: "wipe", idempotencyKey: "k" }
      ])
      yield* sql`INSERT INTO runs (run_id, tenant_id, workflow, root_run_id, status, head_seq, head_hash, cost_usd, created_at, updated_at) VALUES ('r', 'acme', 'job', 'r', 'needs_reconciliation', 0, ${crafted[0]!.prevHash}, 0, 0, 0)`
      for (const e of crafted) {
        yield* sql`INSERT INTO events (run_id, seq, event_id, tenant_id, timestamp, type, step_key, payload, prev_hash, hash) VALUES (${e.runId}, ${e.seq}, ${e.eventId}, ${e.tenantId}, ${e.timestamp}, ${e.type}, ${e.stepKey}, ${JSON.stringify(e.payload)}, ${e.prevHash}, ${e.hash})`
      }
      const info = yield* store.getRun("acme", "r")
      expect(info).toMatchObject({ status: "needs_reconciliation", headSeq: 3 })
      const globexBefore = yield* store.readEvents("globex", "r")

      const result = yield* Effect.either(kernel.reconcile({ tenantId: "acme", runId: "r", outcome: { ok: true, result: "done" }, force: true }))
      const globexAfter = yield* store.readEvents("globex", "r")
      // Nothing may be written to globex's run by a call naming acme's.
      expect(globexAfter.map((e) => e.type)).toEqual(globexBefore.map((e) => e.type))
      expect(result).toMatchObject({ _tag: "Left", left: { _tag: "LogTampered" } })
    }))
})
