// Continue-as-new: a run ends and continues as a new run of its lineage, atomically, with the state it hands over.
import { describe, expect, it } from "@effect/vitest"
import { Artana, Chat, Event, EventStore, Kernel, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { Effect, Either, Layer, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

const Page = Schema.Struct({ page: Schema.Number, total: Schema.Number })

/** Pages 0..last, one run each: every run does its page's work once (a memoized step) and hands the total over. */
const pager = (work: Array<string>, options: { readonly last?: number; readonly pauseAt?: number } = {}) =>
  Workflow.make({
    name: "pager",
    input: Page,
    output: Schema.Number,
    run: ({ page, total }, ctx) =>
      Effect.gen(function*() {
        const items = yield* ctx.step("work", Effect.sync(() => (work.push(`${ctx.runId}:${page}`), page + 1)), Schema.Number)
        if (page === options.pauseAt) yield* ctx.pauseForHuman({ reason: `check page ${page}` })
        if (page < (options.last ?? 3)) return yield* ctx.continueAsNew({ page: page + 1, total: total + items })
        return total + items
      })
  })

const logOf = (runId: string) => Effect.flatMap(EventStore.EventStore, (s) => s.readEvents(tenant.tenantId, runId))
const runOf = (runId: string) => Effect.flatMap(EventStore.EventStore, (s) => s.getRun(tenant.tenantId, runId))

describe("ctx.continueAsNew", () => {
  it.effect("a run continues as a chain of runs with derived ids; execute returns the last run's result under its id", () => {
    const work: Array<string> = []
    const w = pager(work)
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* kernel.execute(w, { runId: "pages", tenant, input: { page: 0, total: 0 } })
      expect(result).toEqual({ status: "completed", runId: "pages::continued::3", output: 1 + 2 + 3 + 4 })
      expect(work).toEqual(["pages:0", "pages::continued::1:1", "pages::continued::2:2", "pages::continued::3:3"])
      const ids = ["pages", "pages::continued::1", "pages::continued::2", "pages::continued::3"]
      expect(Event.continuedRunId("pages", 2)).toBe(ids[2])
      for (const [i, id] of ids.entries()) {
        const log = yield* logOf(id)
        const run = yield* runOf(id)
        expect(run).toMatchObject({ status: i < 3 ? "continued" : "completed", rootRunId: "pages", tenantId: tenant.tenantId, workflow: "pager" })
        expect(log[0]!.payload).toMatchObject(
          i === 0 ? { _tag: "RunStarted", input: { page: 0, total: 0 } } : {
            _tag: "RunStarted",
            input: { page: i, total: (i * (i + 1)) / 2 },
            rootRunId: "pages",
            continuedFrom: { runId: ids[i - 1], chainRunId: "pages", generation: i }
          }
        )
        expect(log.map((e) => e.type)).toEqual(["RunStarted", "StepCompleted", i < 3 ? "RunContinued" : "RunCompleted"])
        if (i < 3) expect(log[2]!.payload).toEqual({ _tag: "RunContinued", nextRunId: ids[i + 1], input: { page: i + 1, total: ((i + 1) * (i + 2)) / 2 } })
        expect(yield* kernel.verify({ tenantId: tenant.tenantId, runId: id })).toMatchObject({ ok: true })
      }
      // Executing or resuming the first run again follows the chain to its result: nothing runs again.
      expect(yield* kernel.execute(w, { runId: "pages", tenant, input: { page: 0, total: 0 } })).toEqual(result)
      expect(yield* kernel.resume({ tenantId: tenant.tenantId, runId: "pages::continued::1", workflow: w })).toEqual(result)
      expect(work).toHaveLength(4)
    }).pipe(Effect.provide(kernelLayer([], [])))
  })

  it.effect("a pause in a successor is answered through the first run's id", () => {
    const work: Array<string> = []
    const w = pager(work, { last: 2, pauseAt: 1 })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const paused = yield* kernel.execute(w, { runId: "p", tenant, input: { page: 0, total: 0 } })
      expect(paused).toMatchObject({ status: "paused", runId: "p::continued::1", reason: "check page 1" })
      const done = yield* kernel.resume({ tenantId: tenant.tenantId, runId: "p", response: "ok" })
      expect(done).toEqual({ status: "completed", runId: "p::continued::2", output: 1 + 2 + 3 })
      expect(work).toEqual(["p:0", "p::continued::1:1", "p::continued::2:2"])
    }).pipe(Effect.provide(kernelLayer([], [], { kernel: { workflows: [w] } })))
  })

  it.effect("replay of the first run replays the chain; a different hand-over on replay is NonDeterminism", () => {
    const work: Array<string> = []
    const w = pager(work)
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* kernel.execute(w, { runId: "r", tenant, input: { page: 0, total: 0 } })
      expect(yield* kernel.replay(w, { tenantId: tenant.tenantId, runId: "r" })).toEqual(result)
      expect(work).toHaveLength(4)
      // The same workflow, handing over one more item: the log holds another input.
      const drifted = Workflow.make({
        name: "pager",
        input: Page,
        output: Schema.Number,
        run: ({ page, total }, ctx) =>
          Effect.gen(function*() {
            const items = yield* ctx.step("work", Effect.succeed(0), Schema.Number)
            if (page < 3) return yield* ctx.continueAsNew({ page: page + 1, total: total + items + 1 })
            return total + items
          })
      })
      const diverged = yield* Effect.flip(kernel.replay(drifted, { tenantId: tenant.tenantId, runId: "r" }))
      expect(diverged).toMatchObject({ _tag: "NonDeterminism", runId: "r", stepKey: Event.RUN_STEP_KEY })
      expect(diverged.message).toContain(`"total":1`)
      // Code that completes where the log continued diverges too.
      const finishes = Workflow.make({ name: "pager", input: Page, output: Schema.Number, run: ({ total }) => Effect.succeed(total) })
      const ended = yield* Effect.flip(kernel.replay(finishes, { tenantId: tenant.tenantId, runId: "r::continued::1" }))
      expect(ended).toMatchObject({ _tag: "NonDeterminism", runId: "r::continued::1" })
    }).pipe(Effect.provide(kernelLayer([], [])))
  })

  it.effect("a successor id that exists already fails the handover with SequenceConflict, and the run stays unended", () => {
    const work: Array<string> = []
    const w = pager(work, { last: 1 })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      // Someone else's run holds the id the handover derives.
      yield* kernel.execute(Workflow.make({ name: "other", input: Schema.Null, output: Schema.Null, run: () => Effect.succeed(null) }), {
        runId: "taken::continued::1",
        tenant,
        input: null
      })
      const error = yield* Effect.flip(kernel.execute(w, { runId: "taken", tenant, input: { page: 0, total: 0 } }))
      expect(error).toMatchObject({ _tag: "SequenceConflict", runId: "taken::continued::1" })
      expect((yield* store.getRun(tenant.tenantId, "taken")).status).toBe("running")
      expect((yield* logOf("taken")).map((e) => e.type)).toEqual(["RunStarted", "StepCompleted"])
      expect((yield* logOf("taken::continued::1")).map((e) => e.type)).toEqual(["RunStarted", "RunCompleted"])
    }).pipe(Effect.provide(kernelLayer([], [])))
  })

  it.effect("a chain keeps the version that started it when newer code continues it: its runs are counted there", () => {
    // Each page waits for a person, then continues as new; version 2 of the code continues a run version 1 started.
    const stepper = (version: string) =>
      Workflow.make({
        name: "stepper",
        version,
        input: Schema.Number,
        output: Schema.Number,
        run: (page, ctx) =>
          Effect.gen(function*() {
            yield* ctx.pauseForHuman({ reason: `page ${page}` })
            return page < 2 ? yield* ctx.continueAsNew(page + 1) : page
          })
      })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      expect(yield* kernel.execute(stepper("1"), { runId: "v", tenant, input: 0 })).toMatchObject({ status: "paused", runId: "v" })
      const next = yield* kernel.resume({ tenantId: tenant.tenantId, runId: "v", workflow: stepper("2"), response: "ok" })
      expect(next).toMatchObject({ status: "paused", runId: "v::continued::1" })
      // The successor is version 1's run (a worker's task stays pinned to "1"): version 1 is still in flight.
      expect((yield* runOf("v::continued::1")).version).toBe("1")
      expect((yield* logOf("v::continued::1"))[0]!.payload).toMatchObject({ _tag: "RunStarted", version: "1" })
      expect(yield* store.versionCounts({ workflow: "stepper" })).toMatchObject([{ workflow: "stepper", version: "1", runs: 2, inFlight: 1 }])
    }).pipe(Effect.provide(kernelLayer([], [])))
  })

  it.effect("the budget spent carries over: a successor is held to what the whole chain spent", () => {
    const budgetTenant = Tenant.TenantContext.make({ tenantId: tenant.tenantId, capabilities: [], budgetUsdLimit: 0.4 })
    // Each run's model call costs 0.15 USD (a million input tokens of gpt-4o-mini).
    const spender = Workflow.make({
      name: "spender",
      input: Schema.Number,
      output: Schema.Number,
      run: (n, ctx) =>
        Effect.gen(function*() {
          yield* ctx.chat({ messages: [Chat.user(`call ${n}`)] })
          return n < 5 ? yield* ctx.continueAsNew(n + 1) : n
        })
    })
    const reply = ScriptedModel.text("ok", { usage: { inputTokens: 1_000_000, outputTokens: 0 } })
    const layer = Layer.provideMerge(
      Kernel.layer(),
      Layer.mergeAll(EventStore.layerMemory, ScriptedModel.layer([reply, reply, reply, reply], { model: "gpt-4o-mini" }), ToolRegistry.layer([]))
    )
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* Effect.either(kernel.execute(spender, { runId: "spend", tenant: budgetTenant, input: 0 }))
      expect(Either.isLeft(result) && result.left._tag).toBe("BudgetExceeded")
      // The third run spent 0.15 of its own: what stopped it is the chain's 0.45.
      const third = yield* runOf("spend::continued::2")
      expect(third).toMatchObject({ status: "failed", rootRunId: "spend" })
      expect(third.costUsd).toBeCloseTo(0.15, 9)
      expect(yield* Effect.flatMap(EventStore.EventStore, (s) => s.lineageCostUsd(tenant.tenantId, "spend"))).toBeCloseTo(0.45, 9)
    }).pipe(Effect.provide(layer))
  })
})

describe("the Promise client and continue-as-new", () => {
  it("an async workflow continues as new; run returns the chain's last run, status names a run's successor", async () => {
    const countdown = Artana.workflow({
      name: "countdown",
      input: Schema.Number,
      output: Schema.String,
      run: async (n, ctx) => {
        const length = await ctx.historyLength()
        if (n > 0) return ctx.continueAsNew(n - 1)
        return `liftoff after ${length} events`
      }
    })
    const artana = Artana.create({ model: ScriptedModel.layer([]), workflows: [countdown] })
    try {
      const acme = { tenantId: "acme", budgetUsdLimit: 1 }
      expect(await artana.run(countdown, { runId: "cd", tenant: acme, input: 2 })).toEqual({
        status: "completed",
        runId: "cd::continued::2",
        // The last run's log: RunStarted, then the history step.
        output: "liftoff after 1 events"
      })
      expect(await artana.status({ tenantId: "acme", runId: "cd" })).toEqual({ status: "continued", runId: "cd", nextRunId: "cd::continued::1" })
      expect((await artana.readEvents({ tenantId: "acme", runId: "cd::continued::1" })).map((e) => e.type)).toEqual(["RunStarted", "StepCompleted", "RunContinued"])
    } finally {
      await artana.close()
    }
  })
})
