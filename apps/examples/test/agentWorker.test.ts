// An agent is an ordinary workflow to the task layer: the session submits it by value, workers on one SQLite file
// run it by name, and each run is the agent's own log (its tool ran once, its chain verifies).
import { afterAll, describe, expect, it } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Fiber, Layer, LogLevel, Schema } from "effect"
import { Artana, ModelPort, Pricing, Tenant, Tool } from "@artana/core"
import { AutonomousAgent, SqlMemoryStore } from "@artana/agent"
import { SqliteStore } from "@artana/store-sqlite"
import { ArtanaSession, Worker, WorkerLog } from "@artana/worker"

const dir = mkdtempSync(join(tmpdir(), "artana-agent-worker-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const tiers: Record<string, string> = { Ann: "gold", Bob: "silver", Cy: "bronze", Di: "gold" }

describe("an agent run by workers", () => {
  it.live("submitted through ArtanaSession, run by two workers over one file: each run completes once, with its own answer", () => {
    const calls: Array<string> = []
    const lookup = Tool.make({
      name: "lookup",
      description: "Looks a customer's tier up",
      parameters: Schema.Struct({ name: Schema.String }),
      handler: ({ name }, ctx) =>
        Effect.sync(() => {
          calls.push(ctx.idempotencyKey)
          return { name, tier: tiers[name] ?? "none" }
        })
    })
    const support = AutonomousAgent.make({ name: "support", instructions: "You answer with a customer's tier.", tools: [lookup] })
    // A model that answers each run from its own messages (the runs interleave): it looks the customer up, then
    // answers with what the tool said.
    const model = ModelPort.make({
      defaultModel: "scripted",
      prices: { scripted: Pricing.free },
      generate: (request) =>
        Effect.sync(() => {
          const last = request.messages[request.messages.length - 1]
          const usage = { inputTokens: 10, outputTokens: 10 }
          if (last?.role === "tool") {
            const { name, tier } = JSON.parse(last.content) as { name: string; tier: string }
            return { model: request.model, message: { role: "assistant" as const, content: `${name} is ${tier}` }, usage }
          }
          const prompt = request.messages.find((m) => m.role === "user")?.content ?? ""
          const name = /tier is (\w+)/.exec(prompt)?.[1] ?? "nobody"
          return {
            model: request.model,
            message: { role: "assistant" as const, content: null, toolCalls: [{ id: "c1", name: "lookup", arguments: JSON.stringify({ name }) }] },
            usage
          }
        })
    })
    const store = SqliteStore.layer({ filename: join(dir, "artana.db") })
    // The composition root builds the runtime; the session and the workers read the same store's task queue.
    const runtime = Layer.mergeAll(
      Artana.layer({
        store,
        model: Layer.succeed(ModelPort.ModelPort, model),
        workflows: [support.workflow],
        services: [SqlMemoryStore.layer().pipe(Layer.provide(store))]
      }),
      store
    )
    const Live = ArtanaSession.layer.pipe(Layer.provideMerge(runtime))
    const logs = WorkerLog.layer({ directory: join(dir, "logs"), consoleLevel: LogLevel.None })
    const worker = (workerId: string) =>
      Worker.run({ workflows: [support.workflow], concurrency: 2, pollInterval: "20 millis", leaseSeconds: 30, workerId }).pipe(Effect.provide(logs))
    const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

    return Effect.gen(function*() {
      const workers = [yield* Effect.fork(worker("w1")), yield* Effect.fork(worker("w2"))]
      const session = yield* ArtanaSession.ArtanaSession
      const names = Object.keys(tiers)
      const taskIds = yield* Effect.forEach(names, (name) =>
        session.submit({ workflow: support.workflow, input: { prompt: `Which tier is ${name} on?`, model: "scripted" }, tenant, idempotencyKey: `ask-${name}` }))
      // Submitted again under the same key: the same task, not a second run.
      expect(yield* session.submit({ workflow: support.workflow, input: { prompt: "Which tier is Ann on?", model: "scripted" }, tenant, idempotencyKey: "ask-Ann" }))
        .toBe(taskIds[0])
      const results = yield* Effect.forEach(taskIds, (taskId) => session.waitForResult(tenant.tenantId, taskId, { timeout: "2 minutes" }), { concurrency: "unbounded" })
      for (const [i, name] of names.entries()) {
        expect(results[i]).toMatchObject({ status: "completed", output: { output: `${name} is ${tiers[name]}`, turns: 2 } })
      }
      // Each run called its tool exactly once, under its own run's key.
      expect(new Set(calls).size).toBe(names.length)
      expect(calls).toHaveLength(names.length)
      // Each run is an agent run in the log, and its chain verifies.
      for (const result of results) {
        const report = yield* Artana.verify({ tenantId: tenant.tenantId, runId: result.runId })
        expect(report).toMatchObject({ ok: true })
        expect(yield* Artana.status({ tenantId: tenant.tenantId, runId: result.runId })).toMatchObject({ status: "completed", output: { output: expect.stringContaining(" is ") } })
      }
      for (const fiber of workers) yield* Fiber.interrupt(fiber)
    }).pipe(Effect.provide(Live))
  }, 180_000)
})
