// Two sub-runs of one lineage, X and Y, each one model call of at most 100 output tokens, under room for two such
// calls and a half: X is sent first and held back by its model until Y ran to its end. What the budget tests of a
// call that passes its hold later (a re-ask, a stream past its cap) share.
import { Chat, EventStore, Kernel, ModelPort, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { Deferred, Effect, Either, Fiber, Layer, Schema } from "effect"

/** Room for two calls of at most 100 output tokens ($1 each at a cent a token), and a half. */
export const siblingTenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 2.5 })

const rootWorkflow = Workflow.make({ name: "root", input: Schema.Null, output: Schema.Null, run: () => Effect.succeed(null) })
const oneCall = Workflow.make({
  name: "one-call",
  input: Schema.String,
  output: Schema.String,
  run: (prompt, ctx) => Effect.map(ctx.modelStep({ messages: [Chat.user(prompt)], maxOutputTokens: 100, key: "m" }), (r) => String(r.message.content))
})

/**
 * Runs X (prompt "x") until its model completes `xReady`, then Y (prompt "y") to its end, then completes `yDone` and
 * waits for X, on the in-memory store with `port`. X's model should await `yDone`.
 */
export const xThenY = (port: ModelPort.Service, xReady: Deferred.Deferred<void>, yDone: Deferred.Deferred<void>) =>
  Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    const store = yield* EventStore.EventStore
    const tenant = siblingTenant
    yield* kernel.execute(rootWorkflow, { runId: "root", tenant, input: null })
    const x = yield* Effect.fork(Effect.either(kernel.execute(oneCall, { runId: "root::x", tenant, input: "x", parentRunId: "root" })))
    yield* Deferred.await(xReady)
    const y = yield* Effect.either(kernel.execute(oneCall, { runId: "root::y", tenant, input: "y", parentRunId: "root" }))
    yield* Deferred.succeed(yDone, undefined)
    const xResult = yield* Fiber.join(x)
    const runs = yield* store.listRuns("acme", { rootRunId: "root" })
    const costOf = (runId: string) => runs.find((r) => r.runId === runId)?.costUsd ?? Number.NaN
    return {
      x: Either.map(xResult, (r) => r.status),
      y: Either.map(y, (r) => r.status),
      xUsd: costOf("root::x"),
      yUsd: costOf("root::y"),
      lineageUsd: runs.reduce((sum, r) => sum + r.costUsd, 0)
    }
  }).pipe(
    Effect.provide(Kernel.layer().pipe(
      Layer.provideMerge(Layer.mergeAll(EventStore.layerMemory, Layer.succeed(ModelPort.ModelPort, port), ToolRegistry.layer([])))
    ))
  )
