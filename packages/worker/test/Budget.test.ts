// A task's retries and its budget: a budget stop is final (never retried), and a retry's run is a sub-run of the
// task's first run, so every attempt draws on one budget. A real worker on SQLite; a model port that bills each call.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Chat, EventStore, Kernel, ModelPort, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { SqliteStore } from "@artana/store-sqlite"
import { ArtanaSession, Worker } from "@artana/worker"
import { Effect, Fiber, Layer, Schema } from "effect"
import { cleanup, tempDb } from "./helpers.js"

afterAll(cleanup)

// gpt-4o-mini at $0.15 a million input tokens: each call costs $0.15 (and a little for its 10 output tokens).
const CALL_USD = 0.15
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 0.4 })

const world = () => {
  let calls = 0
  const port = ModelPort.make({
    defaultModel: "gpt-4o-mini",
    generate: (r) => Effect.sync(() => ({ model: r.model, message: { role: "assistant" as const, content: `reply ${++calls}` }, usage: { inputTokens: 1_000_000, outputTokens: 10 } }))
  })
  /** `steps` model calls, then a failure when `fails` (the workflow's own, as a bug would be). */
  const spender = Workflow.make({
    name: "spender",
    input: Schema.Struct({ steps: Schema.Number, fails: Schema.Boolean }),
    output: Schema.Null,
    run: ({ fails, steps }, ctx) =>
      Effect.gen(function*() {
        for (let i = 0; i < steps; i++) yield* ctx.modelStep({ messages: [Chat.user(`step ${i}`)], maxOutputTokens: 10, key: `m${i}` })
        if (fails) return yield* Effect.dieMessage("the workflow broke after spending")
        return null
      })
  })
  const kernel = Layer.provideMerge(
    Kernel.layer({ workflows: [spender] }),
    Layer.mergeAll(Layer.orDie(SqliteStore.layer({ filename: tempDb() })), Layer.succeed(ModelPort.ModelPort, port), ToolRegistry.layer([]))
  )
  return { spender, calls: () => calls, layer: Layer.provideMerge(ArtanaSession.layer, kernel) }
}

/** Submits the task, runs a worker until it ended, and returns it with every run of the tenant. */
const runTask = (w: ReturnType<typeof world>, input: { readonly steps: number; readonly fails: boolean }) =>
  Effect.gen(function*() {
    const session = yield* ArtanaSession.ArtanaSession
    const worker = yield* Effect.fork(Worker.run({ workflows: [w.spender], concurrency: 1, pollInterval: "20 millis", leaseSeconds: 30, workerId: "w1" }))
    const taskId = yield* session.submit({ workflow: w.spender, input, tenant, retry: { maxAttempts: 4, backoffSeconds: 0.01 } })
    const result = yield* session.waitForResult(tenant.tenantId, taskId, { timeout: "20 seconds", pollInterval: "20 millis" })
    yield* Fiber.interrupt(worker)
    const store = yield* EventStore.EventStore
    const runs = yield* store.listRuns(tenant.tenantId, {})
    const lineage = yield* store.lineageCostUsd(tenant.tenantId, `task:${taskId}`)
    return { taskId, result, runs, lineage }
  })

describe("a task's retries spend one budget", () => {
  it.live("a budget stop is final: the task fails at once, one run, never retried with the budget again", () => {
    const w = world()
    return Effect.gen(function*() {
      const { lineage, result, runs } = yield* runTask(w, { steps: 10, fails: false })
      expect(result).toMatchObject({ status: "failed", errorTag: "BudgetExceeded" })
      expect(runs).toHaveLength(1)
      expect(w.calls()).toBe(3)
      expect(lineage).toBeLessThan(tenant.budgetUsdLimit + CALL_USD)
    }).pipe(Effect.provide(w.layer))
  }, 60_000)

  it.live("a retry after the workflow failed is a sub-run of the first attempt's run: the attempts share the budget", () => {
    const w = world()
    return Effect.gen(function*() {
      const { lineage, result, runs, taskId } = yield* runTask(w, { steps: 2, fails: true })
      // Attempt 1 spent two calls and failed; attempt 2 (a sub-run of it) is stopped by the shared budget at its first
      // call, a budget stop that ends the task; without the lineage it would have spent as much again, and again.
      expect(result).toMatchObject({ status: "failed", errorTag: "BudgetExceeded" })
      const byId = new Map(runs.map((r) => [r.runId, r]))
      expect([...byId.keys()].sort()).toEqual([`task:${taskId}`, `task:${taskId}:attempt-2`])
      expect(byId.get(`task:${taskId}:attempt-2`)).toMatchObject({ parentRunId: `task:${taskId}`, rootRunId: `task:${taskId}` })
      expect(w.calls()).toBe(3)
      expect(lineage).toBeLessThan(tenant.budgetUsdLimit + CALL_USD)
    }).pipe(Effect.provide(w.layer))
  }, 60_000)
})
