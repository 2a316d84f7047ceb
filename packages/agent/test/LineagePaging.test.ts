// A lineage too large to read at once (a long continue-as-new chain, a wide fan-out of sub-agents): `SubAgent.lineage`
// reads a page of its run rows and says where the rest is; `SubAgent.lineagePage` pages the rest with that cursor.
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { EventStore } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SubAgent } from "@artana/agent"
import { SqliteStore } from "@artana/store-sqlite"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { tenant } from "./fixtures.js"

const RUNS = 5000
let dir = ""
let filename = ""

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "artana-lineage-"))
  filename = path.join(dir, "lineage.db")
  await Effect.runPromise(Effect.gen(function*() {
    const store = yield* EventStore.EventStore
    const started = (runId: string, lineage: { readonly parentRunId?: string; readonly rootRunId?: string }, at: number) =>
      TestLog.chain(runId, tenant.tenantId, [], [{ _tag: "RunStarted", workflow: "agent:a", input: null, tenant, ...lineage }], at)
    yield* store.append({ runId: "root", tenantId: tenant.tenantId, expectedSeq: 0, events: started("root", {}, TestLog.T0) })
    yield* store.append({ runId: "root::sub", tenantId: tenant.tenantId, expectedSeq: 0, events: started("root::sub", { parentRunId: "root", rootRunId: "root" }, TestLog.T0 + 1) })
  }).pipe(Effect.provide(SqliteStore.layer({ filename }))))
  // The rest in bulk: sub-runs of the root, copies of root::sub's row, each a millisecond later than the one before.
  const Sqlite = SqliteStore.driver()
  const db = new Sqlite(filename)
  const columns = (db.prepare(`SELECT name FROM pragma_table_info('runs')`).all() as ReadonlyArray<{ readonly name: string }>).map((c) => c.name)
  const select = columns.map((c) => (c === "run_id" ? `'bulk-' || n.i` : c === "created_at" ? `created_at + n.i` : c)).join(", ")
  db.prepare(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) INSERT INTO runs (${columns.join(", ")}) SELECT ${select} FROM runs, n WHERE run_id = 'root::sub'`
  ).run(RUNS - 2)
  db.close()
}, 120_000)

afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("SubAgent.lineage of a lineage larger than a page", () => {
  it.effect("draws the tree from a page (the newest runs and the path to the run asked for), and lineagePage pages every other run once", () =>
    Effect.gen(function*() {
      const tree = yield* SubAgent.lineage({ tenantId: tenant.tenantId, runId: "root::sub" }, { limit: 500 })
      expect(tree.run.runId).toBe("root")
      // The newest 500 and root::sub, on the path.
      expect(tree.children).toHaveLength(501)
      expect(tree.children[0]!.run.runId).toBe("root::sub")
      expect(tree.next).toBeDefined()
      // The path's runs (root, root::sub) are older than the page: the rest of the lineage lists them too.
      const path = new Set(["root", "root::sub"])
      const seen = new Set(tree.children.map((c) => c.run.runId).filter((id) => !path.has(id)))
      let after = tree.next
      let pages = 0
      while (after !== undefined) {
        const page = yield* SubAgent.lineagePage({ tenantId: tenant.tenantId, runId: "root::sub" }, { after, limit: 1000 })
        for (const r of page.runs) {
          expect(r.rootRunId).toBe("root")
          expect(seen.has(r.runId)).toBe(false)
          seen.add(r.runId)
        }
        after = page.next
        pages++
      }
      // Every run of the lineage, the root included, once.
      expect(seen.size).toBe(RUNS)
      expect(pages).toBe(5)
      // A small lineage is read whole, with no cursor.
      const whole = yield* SubAgent.lineage({ tenantId: tenant.tenantId, runId: "root" }, { limit: RUNS })
      expect(whole.children).toHaveLength(RUNS - 1)
      expect(whole.next).toBeUndefined()
    }).pipe(Effect.provide(SqliteStore.layer({ filename }))), 120_000)
})
