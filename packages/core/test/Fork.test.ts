// Forks (`Kernel.fork`) on the in-memory store: overrides that change what follows; refused overrides; tenancy;
// idempotence and spend. The fork at every event of a run is core's ForkSuite (run here, on SQLite and on PostgreSQL).
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Schema, TestClock } from "effect"
import { Chat, Errors, EventStore, Kernel, type Middleware, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { ForkSuite } from "@artana/core/testing/suites"
import { kernelLayer } from "./fixtures.js"

const { finish, original, ran, replies, tenant, tools, workflow: tour } = ForkSuite.Tour
const layer = () => kernelLayer(replies, tools, { kernel: { workflows: [tour] } })

const ref = (runId: string) => ({ tenantId: tenant.tenantId, runId })
const poor = { ...tenant, budgetUsdLimit: 0.05 }

// The fork at every event, the long fork, the copy's atomicity: the suite every store runs.
ForkSuite.suite("memory", () => EventStore.layerMemory)

describe("Kernel.fork", () => {
  it.effect("an override replaces a step's result, and what follows runs on it", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* original("what-if")
      ran.length = 0
      // What if the balance had been 500? The step after it (pick) runs on it, and so on.
      const first = yield* kernel.fork({ ...ref("what-if"), atStep: "balance", overrides: { balance: { balance: 500 } }, workflow: tour })
      const done = yield* finish(first)
      expect(done).toMatchObject({ status: "completed", output: "hello|500|50|yes|paid 50|go" })
      expect(ran).toEqual(["pay"])
      const events = yield* kernel.readEvents(ref(done.runId))
      expect(events[0]!.payload).toMatchObject({ forkedFrom: { runId: "what-if", overridden: ["balance"] } })
      expect(events.find((e) => e.stepKey === "balance" && e.type === "ToolCompleted")!.payload).toMatchObject({ result: { balance: 500 } })
      // A human's answer and a model's reply, replaced.
      const answered = yield* finish(yield* kernel.fork({ ...ref("what-if"), atStep: "confirm", overrides: { confirm: "no" }, workflow: tour }))
      expect(answered).toMatchObject({ status: "completed", output: "hello|100|10|no|paid 10|go" })
      const replied = yield* finish(yield* kernel.fork({ ...ref("what-if"), atStep: "ask", overrides: { ask: "bonjour" }, workflow: tour }))
      expect(replied).toMatchObject({ status: "completed", output: "bonjour|100|10|yes|paid 10|go" })
      // Each override is a fork of its own; the original is untouched.
      expect(new Set([done.runId, answered.runId, replied.runId]).size).toBe(3)
      expect((yield* kernel.verify(ref("what-if"))).ok).toBe(true)
    }).pipe(Effect.provide(layer())), 60_000)

  it.effect("an override of a step outside the prefix, or of one that records no result, is refused and writes nothing", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      const log = yield* original("bad")
      const balanceDone = log.find((e) => e.stepKey === "balance" && e.type === "ToolCompleted")!.seq
      const refused = yield* Effect.flip(kernel.forkLog({ ...ref("bad"), atSeq: balanceDone - 1, overrides: { balance: 1 } }))
      expect(refused).toBeInstanceOf(Errors.InvalidInput)
      expect(refused.message).toContain(`override of step "balance"`)
      const model = yield* Effect.flip(kernel.forkLog({ ...ref("bad"), atStep: "ask", overrides: { ask: { role: "user" } } }))
      expect(model.message).toContain("assistant message")
      const missing = yield* Effect.flip(kernel.forkLog({ ...ref("bad"), atStep: "nope" }))
      expect(missing.message).toContain(`no step "nope"`)
      expect((yield* store.listRuns(tenant.tenantId)).map((r) => r.runId)).toEqual(["bad"])
    }).pipe(Effect.provide(layer())), 60_000)

  it.effect("another tenant's run cannot be forked: RunNotFound, as for a run that never existed", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* original("mine")
      const theirs = yield* Effect.flip(kernel.forkLog({ tenantId: "other", runId: "mine", atSeq: 3 }))
      const none = yield* Effect.flip(kernel.forkLog({ tenantId: "other", runId: "never", atSeq: 3 }))
      expect(theirs).toBeInstanceOf(Errors.RunNotFound)
      expect(theirs.message).toBe(none.message.replace("never", "mine"))
      expect((yield* EventStore.EventStore.pipe(Effect.flatMap((s) => s.listRuns("other"))))).toEqual([])
    }).pipe(Effect.provide(layer())), 60_000)

  it.effect("the same request twice is the same fork; a given id is used; the fork's spend starts with its prefix's", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      const log = yield* original("again")
      const at = log.find((e) => e.stepKey === "pick")!.seq
      const a = yield* kernel.forkLog({ ...ref("again"), atSeq: at })
      const b = yield* kernel.forkLog({ ...ref("again"), atSeq: at })
      expect([a.created, b.created, b.runId]).toEqual([true, false, a.runId])
      const named = yield* kernel.forkLog({ ...ref("again"), atSeq: at, forkRunId: "try-2" })
      expect(named).toMatchObject({ runId: "try-2", created: true })
      // A given id that is another run's is refused.
      const taken = yield* Effect.flip(kernel.forkLog({ ...ref("again"), atSeq: 1, forkRunId: "try-2" }))
      expect(taken).toBeInstanceOf(Errors.InvalidInput)
      // Its own root, charged what its prefix's model step cost (the original's record is unchanged).
      const fork = yield* store.getRun(tenant.tenantId, a.runId)
      const source = yield* store.getRun(tenant.tenantId, "again")
      expect([fork.rootRunId, fork.parentRunId, fork.costUsd, fork.status]).toEqual([a.runId, undefined, 0.01, "running"])
      expect(source.costUsd).toBe(0.01)
      expect(yield* store.lineageCostUsd(tenant.tenantId, a.runId)).toBe(0.01)
    }).pipe(Effect.provide(layer())), 60_000)

  it.effect("a fork carries what the source's sub-runs spent by its prefix's end: its budget does not start afresh", () => {
    // A $0.05 budget: the parent's call ($0.01) and its sub-agent's ($0.04, a grandchild's $0.01 of it) spend it all.
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      const scripted = yield* ScriptedModel.ScriptedModel
      const spend = (name: string, inner?: Workflow.Workflow<null, string, unknown>): Workflow.Workflow<null, string, unknown> =>
        Workflow.make({
          name,
          input: Schema.Null,
          output: Schema.String,
          run: (_i, ctx) =>
            Effect.gen(function*() {
              if (inner !== undefined) yield* kernel.execute(inner, { runId: `${ctx.runId}::inner`, tenant: ctx.tenant, parentRunId: ctx.runId, input: null })
              return (yield* ctx.modelStep({ messages: [Chat.user("spend")], tools: [] })).message.content ?? ""
            })
        })
      const child = spend("child", spend("grandchild"))
      const delegate = Tool.make({
        name: "delegate",
        description: "Runs a sub-agent",
        parameters: Schema.Struct({}),
        // The test's clock stands still unless moved: the sub-agent starts a millisecond after the step before it ended,
        // and the step ends a millisecond after it (a real clock moves on its own; in the same millisecond, a sub-run
        // is counted: a fork never starts with less spent).
        handler: (_args, ctx) =>
          Effect.gen(function*() {
            yield* TestClock.adjust("1 millis")
            const result = yield* kernel.execute(child, { runId: `${ctx.runId}::child`, tenant: ctx.tenant, parentRunId: ctx.runId, input: null })
            yield* TestClock.adjust("1 millis")
            return result.status
          })
      })
      const parent = Workflow.make({
        name: "parent",
        input: Schema.Null,
        output: Schema.String,
        run: (_i, ctx) =>
          Effect.gen(function*() {
            const step = yield* ctx.modelStep({ messages: [Chat.user("go")], tools: [delegate] })
            yield* ctx.toolCall(step.toolCalls[0]!, { tools: [delegate], key: "delegate" })
            return (yield* ctx.modelStep({ messages: [Chat.user("again")], tools: [] })).message.content ?? ""
          })
      })
      const original = yield* Effect.either(kernel.execute(parent, { runId: "spent", tenant: poor, input: null }))
      expect(Either.isLeft(original) && original.left._tag).toBe("BudgetExceeded")
      expect(scripted.calls()).toBe(3)
      // The fork after the sub-agent's step: its prefix's own call, and what the sub-agent's lineage spent.
      const forked = yield* kernel.forkLog({ ...ref("spent"), atStep: "delegate" })
      expect(forked.forkedFrom.carriedUsd).toBeCloseTo(0.04)
      expect(yield* store.lineageCostUsd(tenant.tenantId, forked.runId)).toBeCloseTo(0.05)
      expect((yield* kernel.verify(ref(forked.runId))).ok).toBe(true)
      // Driven on, its next call is refused as the source's was: no budget came back.
      const driven = yield* Effect.either(kernel.resume({ ...ref(forked.runId), workflow: parent }))
      expect(Either.isLeft(driven) && driven.left._tag).toBe("BudgetExceeded")
      expect(scripted.calls()).toBe(3)
      // A fork of the fork carries what its source carried; a fork before the sub-agent ran carries nothing.
      const again = yield* kernel.forkLog({ ...ref(forked.runId), atStep: "delegate" })
      expect(yield* store.lineageCostUsd(tenant.tenantId, again.runId)).toBeCloseTo(0.05)
      const before = yield* kernel.forkLog({ ...ref("spent"), atStep: "model:0" })
      expect(before.forkedFrom.carriedUsd).toBeUndefined()
      expect(yield* store.lineageCostUsd(tenant.tenantId, before.runId)).toBeCloseTo(0.01)
    }).pipe(Effect.provide(kernelLayer([
      ScriptedModel.toolCall("delegate", {}, { costUsd: 0.01 }),
      ScriptedModel.text("grandchild spent", { costUsd: 0.01 }),
      ScriptedModel.text("child spent", { costUsd: 0.03 }),
      ScriptedModel.text("unreachable", { costUsd: 0.01 })
    ], [])))
  })

  it.effect("a fork of a continue-as-new chain's later run carries what the earlier runs spent", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      const scripted = yield* ScriptedModel.ScriptedModel
      const chain = Workflow.make({
        name: "chain",
        input: Schema.Number,
        output: Schema.String,
        run: (generation, ctx) =>
          Effect.gen(function*() {
            const first = yield* ctx.modelStep({ messages: [Chat.user(`gen ${generation}`)], tools: [] })
            if (generation === 0) return yield* ctx.continueAsNew(1)
            return (yield* ctx.modelStep({ messages: [Chat.user("again")], tools: [] })).message.content ?? first.message.content ?? ""
          })
      })
      const original = yield* Effect.either(kernel.execute(chain, { runId: "chain", tenant: poor, input: 0 }))
      // gen 0 spent $0.04, gen 1 $0.01: the lineage is at its $0.05 limit and gen 1's second call is refused.
      expect(Either.isLeft(original) && original.left._tag).toBe("BudgetExceeded")
      expect(scripted.calls()).toBe(2)
      expect(yield* store.lineageCostUsd(tenant.tenantId, "chain")).toBeCloseTo(0.05)
      const forked = yield* kernel.forkLog({ ...ref("chain::continued::1"), atStep: "model:0" })
      const driven = yield* Effect.either(kernel.resume({ ...ref(forked.runId), workflow: chain }))
      expect(Either.isLeft(driven) && driven.left._tag).toBe("BudgetExceeded")
      // The source's lineage had spent $0.05 by the prefix's end.
      expect(yield* store.lineageCostUsd(tenant.tenantId, forked.runId)).toBeCloseTo(0.05)
    }).pipe(Effect.provide(kernelLayer([
      ScriptedModel.text("gen0", { costUsd: 0.04 }),
      ScriptedModel.text("gen1", { costUsd: 0.01 }),
      ScriptedModel.text("should be refused", { costUsd: 0.01 })
    ], []))))

  it.effect("a fork of a sub-run carries what its parent spent on the same budget", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      const scripted = yield* ScriptedModel.ScriptedModel
      const child = Workflow.make({
        name: "child2",
        input: Schema.Null,
        output: Schema.String,
        run: (_i, ctx) =>
          Effect.gen(function*() {
            yield* ctx.modelStep({ messages: [Chat.user("child one")], tools: [] })
            return (yield* ctx.modelStep({ messages: [Chat.user("child two")], tools: [] })).message.content ?? ""
          })
      })
      const parent = Workflow.make({
        name: "parent2",
        input: Schema.Null,
        output: Schema.String,
        run: (_i, ctx) =>
          Effect.gen(function*() {
            yield* ctx.modelStep({ messages: [Chat.user("parent")], tools: [] })
            const r = yield* kernel.execute(child, { runId: `${ctx.runId}::child`, tenant: ctx.tenant, parentRunId: ctx.runId, input: null })
            return r.status
          })
      })
      // The child's second call is refused: parent and child spent the lineage's $0.05.
      const original = yield* Effect.either(kernel.execute(parent, { runId: "p2", tenant: poor, input: null }))
      expect(Either.isLeft(original) && original.left._tag).toBe("BudgetExceeded")
      expect(scripted.calls()).toBe(2)
      expect(yield* store.lineageCostUsd(tenant.tenantId, "p2")).toBeCloseTo(0.05)
      const forked = yield* kernel.forkLog({ ...ref("p2::child"), atStep: "model:0" })
      const driven = yield* Effect.either(kernel.resume({ ...ref(forked.runId), workflow: child }))
      // The sub-run's second call was refused on the lineage's budget; its fork's should be too.
      expect(Either.isLeft(driven) && driven.left._tag).toBe("BudgetExceeded")
    }).pipe(Effect.provide(kernelLayer([
      ScriptedModel.text("parent", { costUsd: 0.04 }),
      ScriptedModel.text("child one", { costUsd: 0.01 }),
      ScriptedModel.text("should be refused", { costUsd: 0.01 })
    ], []))))

  it.effect("a step's notes written before its request stay with it: a fork at a note is cut back before the step", () => {
    // A middleware that notes every tool call: for a call that needs approval, its note leads the approval's batch.
    const noting: Middleware.Interceptor = { name: "noting", beforeTool: (call, ctx) => Effect.as(ctx.note("noting", "seen", { tool: call.tool }), call) }
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const log = yield* original("noted")
      const note = log.find((e) => e.type === "MiddlewareNote" && e.stepKey === "pay")!
      expect(log[note.seq]).toMatchObject({ type: "ApprovalRequested", stepKey: "pay" })
      const forked = yield* kernel.forkLog({ ...ref("noted"), atSeq: note.seq })
      expect(forked.forkedFrom.seq).toBe(note.seq - 1)
      expect(yield* finish(yield* kernel.fork({ ...ref("noted"), atSeq: note.seq, workflow: tour }))).toMatchObject({ status: "completed", output: "hello|100|10|yes|paid 10|go" })
    }).pipe(Effect.provide(kernelLayer(replies, tools, { middleware: [noting], kernel: { workflows: [tour] } })))
  }, 60_000)
})

describe("a fork overriding a person's response (found in review)", () => {
  const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
  const ask = Workflow.make({
    name: "ask",
    input: Schema.Null,
    output: Schema.Boolean,
    run: (_i, ctx) => Effect.map(ctx.pauseForHuman({ reason: "wire $1M?", schema: Schema.Struct({ approve: Schema.Boolean }) }), (r) => r.approve)
  })
  const layer = Layer.provideMerge(Kernel.layer({ workflows: [ask] }), Layer.mergeAll(EventStore.layerMemory, ScriptedModel.layer([]), ToolRegistry.layer([])))

  it.effect("does not attribute the fork's replaced response to the person who gave the original", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      expect((yield* kernel.execute(ask, { runId: "r", tenant, input: null })).status).toBe("paused")
      yield* kernel.resume({ tenantId: "acme", runId: "r", response: { approve: false }, respondedBy: "ann@acme" })
      const responded = (yield* store.readEvents("acme", "r")).find((e) => e.payload._tag === "HumanResponded")!
      expect(responded.payload).toMatchObject({ payload: { approve: false }, respondedBy: "ann@acme" })
      const forked = yield* kernel.forkLog({ tenantId: "acme", runId: "r", atSeq: responded.seq, overrides: { [responded.stepKey]: { approve: true } } })
      const copy = (yield* store.readEvents("acme", forked.runId)).find((e) => e.payload._tag === "HumanResponded")!
      expect(copy.payload).toMatchObject({ payload: { approve: true } })
      // ann said no; the fork's "yes" is not hers.
      expect(copy.payload).not.toHaveProperty("respondedBy", "ann@acme")
    }).pipe(Effect.provide(layer)))
})
