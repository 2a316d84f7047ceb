import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Schema, TestClock } from "effect"
import { EventStore, Kernel, Tool, Workflow } from "@artana/core"
import { kernelLayer, tenant } from "./fixtures.js"

describe("Workflow context", () => {
  it.effect("sleep is a durable timer: a resumed run sleeps only what is left", () => {
    const napper = Workflow.make({
      name: "napper",
      input: Schema.Null,
      output: Schema.Number,
      run: (_i, ctx) =>
        Effect.gen(function*() {
          yield* ctx.sleep("1 hour")
          return yield* ctx.now()
        })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const first = yield* Effect.fork(kernel.execute(napper, { runId: "nap", tenant, input: null }))
      yield* TestClock.adjust("40 minutes")
      // The process "dies" 40 minutes into the sleep.
      yield* Fiber.interrupt(first)
      const second = yield* Effect.fork(kernel.execute(napper, { runId: "nap", tenant, input: null }))
      yield* TestClock.adjust("19 minutes")
      expect(second.unsafePoll()).toBeNull()
      yield* TestClock.adjust("1 minute")
      const result = yield* Fiber.join(second)
      expect(result).toEqual({ status: "completed", runId: "nap", output: 60 * 60 * 1000 })
      const events = yield* Effect.flatMap(EventStore.EventStore, (s) => s.readEvents(tenant.tenantId, "nap"))
      expect(events.map((e) => `${e.type}@${e.stepKey}`)).toEqual([
        "RunStarted@run", "StepCompleted@sleep:0", "RunResumed@run", "StepCompleted@now:1", "RunCompleted@run"
      ])
    }).pipe(Effect.provide(kernelLayer([], [])))
  })

  it.effect("explicit step keys and memoized steps run once across executions", () => {
    let runs = 0
    const w = Workflow.make({
      name: "memo",
      input: Schema.Null,
      output: Schema.Struct({ at: Schema.DateFromString }),
      run: (_i, ctx) =>
        Effect.gen(function*() {
          const at = yield* ctx.step("fetch", Effect.sync(() => (runs++, new Date(0))), Schema.DateFromString, { key: "fetch-date" })
          yield* ctx.pauseForHuman({ reason: "look" })
          return { at }
        })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* kernel.execute(w, { runId: "memo", tenant, input: null })
      const done = yield* kernel.resume({ tenantId: tenant.tenantId, runId: "memo" })
      expect(done).toEqual({ status: "completed", runId: "memo", output: { at: new Date(0) } })
      expect(runs).toBe(1)
      const events = yield* Effect.flatMap(EventStore.EventStore, (s) => s.readEvents(tenant.tenantId, "memo"))
      expect(events[1]).toMatchObject({ stepKey: "fetch-date", payload: { _tag: "StepCompleted", value: "1970-01-01T00:00:00.000Z" } })
    }).pipe(Effect.provide(kernelLayer([], [], { kernel: { workflows: [w] } })))
  })
})

describe("Tool.make", () => {
  it("generates the JSON Schema the model sees from the Effect Schema", () => {
    const tool = Tool.make({
      name: "search",
      description: "Searches",
      parameters: Schema.Struct({ query: Schema.String, limit: Schema.optional(Schema.Int) }),
      handler: () => Effect.succeed([])
    })
    expect(tool.spec.parameters).toMatchObject({
      type: "object",
      required: ["query"],
      properties: { query: { type: "string" }, limit: { type: "integer" } }
    })
    expect(tool.spec.parameters).not.toHaveProperty("$schema")
  })

  it("refuses names model APIs would refuse", () => {
    expect(() => Tool.make({ name: "has space", description: "", parameters: Schema.Struct({}), handler: () => Effect.succeed(null) })).toThrow(/must match/)
  })
})
