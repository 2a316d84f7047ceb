// A process that dies in a priced model call (`budgetHolds.test.ts`): it prints "calling" once its call is sent (its
// estimate held in the file) and waits there until the test SIGKILLs it. Args: FILENAME RUN_ID.
import { Chat, Kernel, ModelPort, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { Effect, Layer, Schema } from "effect"
import { SqliteStore } from "../../src/index.js"

const [filename = "", runId = "crashed"] = process.argv.slice(2)
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1.5 })
const oneCall = Workflow.make({
  name: "one-call",
  input: Schema.Null,
  output: Schema.String,
  run: (_input, ctx) => Effect.map(ctx.modelStep({ messages: [Chat.user("hi")], maxOutputTokens: 1, key: "m" }), (r) => String(r.message.content))
})
const port = ModelPort.make({
  defaultModel: "m",
  prices: { m: { input: 0, cachedInput: 0, output: 1_000_000 } },
  generate: () => Effect.zipRight(Effect.sync(() => console.log("calling")), Effect.never)
})
const layer = Kernel.layer().pipe(
  Layer.provideMerge(Layer.mergeAll(SqliteStore.layer({ filename }), Layer.succeed(ModelPort.ModelPort, port), ToolRegistry.layer([])))
)
Effect.runPromise(Effect.flatMap(Kernel.Kernel, (kernel) => kernel.execute(oneCall, { runId, tenant, input: null })).pipe(Effect.provide(layer))).catch((e) => {
  console.error(e)
  process.exit(1)
})
