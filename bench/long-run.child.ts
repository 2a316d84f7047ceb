// One process of bench/scale/resume.ts: `node --import tsx long-run.child.ts COMMAND FILE RUN [STEPS]`, started in
// bench/. Prints one JSON line: what it measured, and its peak RSS (MB).
//   write  FILE RUN STEPS  appends the run paused after STEPS memoized steps (TestLog.LongRun.write)
//   open   FILE RUN        only opens the store and reads the run's record (the baseline process)
//   resume FILE RUN        resumes the run with a response (`ms`: the resume alone)
//   floor  FILE RUN        a bare ordered SELECT of the run's rows and a JSON.parse of each payload (`ms`)
import { Effect, Layer, Predicate, Schema } from "effect"
import { EventStore, Kernel, ModelPort, ToolRegistry } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { tenant } from "./fixtures.js"

const [command, filename, runId, stepsText] = process.argv.slice(2)
if (command === undefined || filename === undefined || runId === undefined) throw new Error("usage: long-run.child.ts COMMAND FILE RUN [STEPS]")

const noModel = ModelPort.make({ defaultModel: "none", generate: () => Effect.dieMessage("a long run calls no model") })
const layer = Layer.provideMerge(
  Kernel.layer({ workflows: [TestLog.LongRun.workflow] }),
  Layer.mergeAll(SqliteStore.layer({ filename }), Layer.succeed(ModelPort.ModelPort, noModel), ToolRegistry.layer([]))
)
const now = () => performance.now()

const TableName = Schema.Struct({ name: Schema.String })

const program: Effect.Effect<Record<string, unknown>, unknown, Kernel.Kernel | EventStore.EventStore> = Effect.gen(function*() {
  switch (command) {
    case "write": {
      const store = yield* EventStore.EventStore
      yield* TestLog.LongRun.write(store, { runId, tenant, steps: Number(stepsText) })
      return {}
    }
    case "open": {
      const info = yield* (yield* EventStore.EventStore).getRun(tenant.tenantId, runId)
      return { headSeq: info.headSeq }
    }
    case "resume": {
      const kernel = yield* Kernel.Kernel
      const t0 = now()
      const result = yield* kernel.resume({ tenantId: tenant.tenantId, runId, workflow: TestLog.LongRun.workflow, response: "approved" })
      const ms = now() - t0
      if (result.status !== "completed") throw new Error(`the resumed run is ${result.status}`)
      return { ms }
    }
    case "floor": {
      const Sqlite = SqliteStore.driver()
      const db = new Sqlite(filename)
      const table = Schema.decodeUnknownSync(TableName)(
        db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%events' AND name NOT LIKE 'floor%'`).get()
      ).name
      const t0 = now()
      let parsed = 0
      for (const row of db.prepare(`SELECT * FROM ${table} WHERE tenant_id = ? AND run_id = ? ORDER BY seq`).all(tenant.tenantId, runId)) {
        // A plain check, not a schema: the floor is the bare read.
        if (Predicate.hasProperty(row, "payload") && typeof row.payload === "string") parsed += JSON.parse(row.payload) === null ? 0 : 1
      }
      const ms = now() - t0
      db.close()
      return { ms, rows: parsed }
    }
    default:
      throw new Error(`unknown command ${command}`)
  }
})

const measured = await Effect.runPromise(Effect.provide(program, layer))
process.stdout.write(`${JSON.stringify({ ...measured, peakRssMb: process.resourceUsage().maxRSS / 1024 })}\n`)
