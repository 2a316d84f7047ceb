// SqlEventStore's seam for a store package's own append (`SqlEventStore.AppendDialect`): the store appends through
// the dialect provided for its client, and through its own (SQLite's head trigger) when the dialect is another
// client's. On real SQLite files.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "@effect/sql"
import { Errors, SqlEventStore, Tenant } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-append-dialect-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
const tempDb = () => path.join(fs.mkdtempSync(path.join(root, "db-")), "artana.db")

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const started = TestLog.chain("run-1", "acme", [], [{ _tag: "RunStarted", workflow: "w", input: null, tenant }])

/** A dialect that writes nothing and says so: a store that uses it fails every append with this reason. */
const refusing = (client: SqlClient.SqlClient, tablesSeen: Array<string>): SqlEventStore.AppendDialectService => ({
  client,
  make: (tables) => {
    tablesSeen.push(tables.events)
    return () => Effect.fail(new Errors.StoreError({ operation: "append", reason: "written by the test's dialect" }))
  }
})

describe("SqlEventStore.AppendDialect", () => {
  it.scoped("the store appends through the dialect provided for its own client, over its own tables", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(SqliteStore.layerClient({ filename: tempDb() }))
      const client = Context.get(context, SqlClient.SqlClient)
      const seen: Array<string> = []
      const store = yield* Effect.provide(SqlEventStore.make({ tablePrefix: "app_" }), Context.add(context, SqlEventStore.AppendDialect, refusing(client, seen)))
      const error = yield* Effect.flip(store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events: started }))
      expect(error).toMatchObject({ _tag: "StoreError", reason: "written by the test's dialect" })
      expect(seen).toEqual(["app_events"])
      expect((yield* Effect.flip(store.readEvents("acme", "run-1")))._tag).toBe("RunNotFound")
    }))

  it.scoped("a dialect provided for another client is not used: the store appends through its own", () =>
    Effect.gen(function*() {
      const other = Context.get(yield* Layer.build(SqliteStore.layerClient({ filename: tempDb() })), SqlClient.SqlClient)
      const context = yield* Layer.build(SqliteStore.layerClient({ filename: tempDb() }))
      const seen: Array<string> = []
      const store = yield* Effect.provide(SqlEventStore.make(), Context.add(context, SqlEventStore.AppendDialect, refusing(other, seen)))
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events: started })
      expect(yield* store.readEvents("acme", "run-1")).toEqual(started)
      expect(seen).toEqual([])
    }))
})
