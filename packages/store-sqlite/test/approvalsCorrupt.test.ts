// One paused run whose head row no longer decodes (edited to a payload the schema refuses: a corrupt row, not a
// tampered chain) is that run's problem: the approvals listing names it as unreadable and lists the others. (Found in
// review: `approvalsPage` left out a run whose log does not verify, but a corrupt row still failed every listing.)
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "@effect/sql"
import { Kernel, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const dirs: Array<string> = []
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})
const tempDb = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "artana-approvals-corrupt-"))
  dirs.push(dir)
  return path.join(dir, "artana.db")
}

const acme = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const send = Tool.make({
  name: "send",
  description: "Sends a message",
  parameters: Schema.Struct({ to: Schema.String }),
  needsApproval: () => Effect.succeed(true),
  handler: ({ to }) => Effect.succeed(`sent to ${to}`)
})
const notify = Workflow.make({ name: "notify", input: Schema.Struct({ to: Schema.String }), output: Schema.String, run: ({ to }, ctx) => ctx.tool(send, { to }) })

/** A kernel on a new SQLite file, and the file's SQL client (to break a row as a person editing it would). */
const world = Effect.suspend(() => Effect.map(
  Layer.build(Layer.provideMerge(
    Kernel.layer({ workflows: [notify] }),
    Layer.mergeAll(SqliteStore.layer({ filename: tempDb() }), ScriptedModel.layer([]), ToolRegistry.layer([send]))
  )),
  (context) => ({ kernel: Context.get(context, Kernel.Kernel), sql: Context.get(context, SqlClient.SqlClient) })
))

describe("approvals with one broken paused run", () => {
  it.scoped("a paused run whose head row was edited so it no longer decodes does not fail the other runs' approvals", () =>
    Effect.gen(function*() {
      const { kernel, sql } = yield* world
      expect((yield* kernel.execute(notify, { runId: "ok", tenant: acme, input: { to: "ann@example.com" } })).status).toBe("paused")
      expect((yield* kernel.execute(notify, { runId: "bad", tenant: acme, input: { to: "joe@example.com" } })).status).toBe("paused")
      // Edited as the cli test edits one (a changed address), but to a value of the wrong type.
      yield* sql`UPDATE events SET payload = replace(payload, '"tool":"send"', '"tool":5') WHERE run_id = 'bad' AND type = 'ApprovalRequested'`
      const page = yield* Effect.either(kernel.approvalsPage({ tenantId: "acme" }))
      expect(page._tag === "Left" ? `${page.left._tag}: ${page.left.message}` : "ok").toBe("ok")
      expect(page._tag === "Right" && page.right.approvals.map((a) => a.runId)).toEqual(["ok"])
      expect(page._tag === "Right" && page.right.unreadable?.map((u) => [u.runId, u.reason.startsWith("corrupt row")])).toEqual([["bad", true]])
    }))

  it.scoped("a broken run is named once, on the page of the inbox it falls in, not on every page that read past it", () =>
    Effect.gen(function*() {
      const { kernel, sql } = yield* world
      // Paused in one millisecond (the test clock): the inbox orders them by run id.
      for (const runId of ["a-ok", "b-bad", "c-ok", "d-ok"]) {
        expect((yield* kernel.execute(notify, { runId, tenant: acme, input: { to: `${runId}@example.com` } })).status).toBe("paused")
      }
      yield* sql`UPDATE events SET payload = replace(payload, '"tool":"send"', '"tool":5') WHERE run_id = 'b-bad' AND type = 'ApprovalRequested'`
      const pages: Array<{ approvals: Array<string>; unreadable: Array<string> }> = []
      let after: string | undefined
      do {
        const page = yield* kernel.approvalsPage({ tenantId: "acme", limit: 1, ...(after === undefined ? {} : { after }) })
        pages.push({ approvals: page.approvals.map((a) => a.runId), unreadable: (page.unreadable ?? []).map((u) => u.runId) })
        after = page.next
      } while (after !== undefined)
      // The first page read b-bad only to learn whether a page follows; it belongs between a-ok and c-ok.
      expect(pages).toEqual([
        { approvals: ["a-ok"], unreadable: [] },
        { approvals: ["c-ok"], unreadable: ["b-bad"] },
        { approvals: ["d-ok"], unreadable: [] }
      ])
    }))
})
