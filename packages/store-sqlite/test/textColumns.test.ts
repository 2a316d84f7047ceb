import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "@effect/sql"
import { EventStore, Tenant, Verify } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

// The store packs kernel-written hashes and ids into bytes and reads them back as text made in SQL and JS; a row
// written by hand (an import, a repair) may hold any of them as TEXT, which SQLite keeps as given. Such values read
// back as exactly their text, even text that looks like a packed value's hex, so the chain sees what is stored.
const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-text-columns-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const started = { _tag: "RunStarted", workflow: "w", input: null, tenant } as const
const step = (name: string) => ({ _tag: "StepCompleted", name, value: name }) as const

/** Ids of every shape: a UUID (packed), text as long as a packed hash's hex in upper case, text with the read's mark. */
const ids = ["6f1c2a4e-9b7d-4c3e-8a5f-0d2b4c6e8f10", "0123456789ABCDEF0123456789ABCDEF", "~marked", "plain-id", "0123456789abcdef"]

describe("hashes and event ids stored as text", () => {
  it.scoped("read back as their text, and the chain checks what is stored (an upper-cased prev_hash breaks its link)", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(root, "db-"))
      const context = yield* Layer.build(SqliteStore.layer({ filename: path.join(dir, "a.db") }))
      const store = Context.get(context, EventStore.EventStore)
      const sql = Context.get(context, SqlClient.SqlClient)
      const events = TestLog.chain("r", "acme", [], [started, step("a"), step("b"), step("c"), step("d")], undefined, (_, seq) => ids[seq - 1]!)
      yield* store.append({ runId: "r", tenantId: "acme", expectedSeq: 0, events })
      expect(yield* store.readEvents("acme", "r")).toEqual(events)

      // By hand, as TEXT: every id, seq 3's hash, and seq 4's prev_hash (the store keeps none, it is the previous hash).
      for (const e of events) yield* sql`UPDATE events SET event_id = ${e.eventId} WHERE run_id = 'r' AND seq = ${e.seq}`
      yield* sql`UPDATE events SET hash = ${events[2]!.hash} WHERE run_id = 'r' AND seq = 3`
      yield* sql`UPDATE events SET prev_hash = ${events[2]!.hash} WHERE run_id = 'r' AND seq = 4`
      const [types] = yield* sql<{ readonly ids: number; readonly hashes: number }>`SELECT
  SUM(typeof(event_id) = 'text') AS ids, SUM(typeof(hash) = 'text') + SUM(typeof(prev_hash) = 'text') AS hashes FROM events WHERE run_id = 'r'`
      expect([Number(types?.ids), Number(types?.hashes)]).toEqual([5, 2])
      const read = yield* store.readEvents("acme", "r")
      expect(read).toEqual(events)
      // A page from seq 4 completes nothing from seq 3: its own prev_hash is stored.
      expect(yield* store.readEvents("acme", "r", 4, 2)).toEqual(events.slice(3))
      expect(Verify.verifyEvents("r", read)).toMatchObject({ ok: true, events: 5 })

      // The same hash in upper case is other text: it is read as stored, and no longer links to seq 3.
      yield* sql`UPDATE events SET prev_hash = ${events[2]!.hash.toUpperCase()} WHERE run_id = 'r' AND seq = 4`
      const altered = yield* store.readEvents("acme", "r")
      expect(altered[3]!.prevHash).toBe(events[2]!.hash.toUpperCase())
      expect(Verify.verifyEvents("r", altered)).toMatchObject({ ok: false, firstBrokenSeq: 4 })
    }))
})
