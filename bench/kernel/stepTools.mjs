// The tools and tenant of the by-hand step scripts (opCount.mjs, stepCpu.mjs, stepHeap.mjs): an idempotent echo,
// two-phase (the default) and with durability "one-commit"; the workflow of N tool steps of a kind and the runtime
// they run in. Plain JS on the built dist.
import { join } from "node:path"
import { Effect, Layer, ManagedRuntime, Schema } from "effect"
import { EventStore, Kernel, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"

export const tenant = Tenant.TenantContext.make({ tenantId: "bench", capabilities: [], budgetUsdLimit: 1 })
const make = (name, durability) =>
  Tool.make({
    name,
    description: "Returns its input",
    parameters: Schema.Struct({ i: Schema.Number, note: Schema.String }),
    idempotent: true,
    ...(durability === undefined ? {} : { durability }),
    handler: (args) => Effect.succeed({ ok: true, i: args.i })
  })
/** By kind: `tool` (two-phase) and `tool_one_commit`. */
export const tools = { tool: make("echo"), tool_one_commit: make("echo_one_commit", "one-commit") }

/** A run of `n` tool steps of `kind` (a key of `tools`). */
export const steps = Workflow.make({
  name: "bench.stepTools",
  input: Schema.Struct({ n: Schema.Number, kind: Schema.String }),
  output: Schema.Number,
  run: ({ kind, n }, ctx) =>
    Effect.gen(function*() {
      const tool = tools[kind]
      for (let i = 0; i < n; i++) yield* ctx.tool(tool, { i, note: "a durable step of the benchmark" })
      return n
    })
})

/** The kernel on STORE ("memory", or SQLite at `sync` in a file of `dir`), and `one(runId, n, kind)` running `steps`. */
export const stepRuntime = (store, sync, dir) => {
  const layer = store === "memory" ? EventStore.layerMemory : SqliteStore.layer({ filename: join(dir, "steps.db"), synchronous: sync })
  const runtime = ManagedRuntime.make(Layer.provideMerge(Kernel.layer(), Layer.mergeAll(layer, ScriptedModel.layer([]), ToolRegistry.layer(Object.values(tools)))))
  const one = (runId, n, kind) => runtime.runPromise(Effect.flatMap(Kernel.Kernel, (k) => k.execute(steps, { runId, tenant, input: { n, kind } })))
  return { runtime, one }
}
