import { Effect, Layer, Schema } from "effect"
import { EventStore, Kernel, ToolRegistry, Verify, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { echo, tenant } from "./fixtures.js"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
const filename = join(mkdtempSync(join(tmpdir(), "prof-")), "db")
const layer = Layer.provideMerge(Kernel.layer(), Layer.mergeAll(SqliteStore.layer({ filename }), ScriptedModel.layer([]), ToolRegistry.layer([echo])))
const steps = Workflow.make({ name: "steps", input: Schema.Struct({ n: Schema.Number }), output: Schema.Number,
  run: ({ n }, ctx) => Effect.gen(function*() { for (let i = 0; i < n; i++) yield* ctx.tool(echo, { i, note: "a durable step of the benchmark" }); return n }) })
const prog = Effect.gen(function*() {
  const kernel = yield* Kernel.Kernel
  const store = yield* EventStore.EventStore
  yield* kernel.execute(steps, { runId: "long", tenant, input: { n: 5000 } })
  for (let r = 0; r < 12; r++) {
    const t0 = performance.now()
    const ev = yield* store.readEvents(tenant.tenantId, "long")
    const t1 = performance.now()
    Verify.verifyEvents("long", ev)
    const t2 = performance.now()
    yield* kernel.replay(steps, { tenantId: tenant.tenantId, runId: "long" })
    const t3 = performance.now()
    console.log(`read ${(t1-t0).toFixed(1)} verify ${(t2-t1).toFixed(1)} replay ${(t3-t2).toFixed(1)}`)
  }
})
await Effect.runPromise(Effect.provide(prog, layer))
