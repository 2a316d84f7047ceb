import { describe, expect, it } from "@effect/vitest"
import { Errors, EventStore, Json, Kernel, Middleware, Tenant, Tool, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { Plan, PlanRunner } from "@artana/cli"
import { Effect, Either, Layer, Schema } from "effect"

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 0 })

const makeTools = () => {
  const calls: Array<string> = []
  const echo = Tool.make({
    name: "echo",
    description: "returns its text",
    parameters: Schema.Struct({ text: Schema.String }),
    success: Schema.Struct({ echoed: Schema.String }),
    handler: ({ text }) => Effect.sync(() => (calls.push(`echo:${text}`), { echoed: text }))
  })
  const boom = Tool.make({
    name: "boom",
    description: "always fails",
    parameters: Schema.Struct({}),
    handler: () => Effect.sync(() => calls.push("boom")).pipe(Effect.zipRight(Effect.fail(new Errors.ToolError({ tool: "boom", reason: "exploded" }))))
  })
  const secret = Tool.make({ name: "secret", description: "denied by the policy", parameters: Schema.Struct({}), handler: () => Effect.sync(() => (calls.push("secret"), "leaked")) })
  return { calls, tools: [echo, boom, secret] }
}

// A stand-in policy: denies `secret`, as the sandbox's policy middleware denies what its rules do not allow.
const policy: Middleware.Interceptor = {
  name: "test-policy",
  beforeTool: (call) => call.tool === "secret" ? Effect.fail(new Errors.PolicyDenied({ tool: call.tool, reason: "not in the allowlist" })) : Effect.succeed(call)
}

const layer = (tools: ReadonlyArray<Tool.Tool>) =>
  Layer.provideMerge(
    Kernel.layer(),
    Layer.mergeAll(EventStore.layerMemory, ScriptedModel.layer([]), ToolRegistry.layer(tools), Middleware.layer([policy]))
  )

const plan = (text: string) => Either.getOrThrow(Plan.parse(text, { file: "plan.yaml" }))

const THREE = plan(`
steps:
  - { id: a, tool: echo, args: { text: one } }
  - { id: b, tool: secret }
  - { id: c, tool: echo, args: { text: three } }
`)

describe("PlanRunner.run", () => {
  it.effect("each step is a tool step keyed step:<id>; the output hash is the hash of the logged result", () => {
    const { calls, tools } = makeTools()
    const twoEchoes = plan("steps:\n  - { id: first, tool: echo, args: { text: hi } }\n  - { tool: echo, args: { text: there } }\n")
    return Effect.gen(function*() {
      const outcome = yield* PlanRunner.run({ tenant, input: { plan: twoEchoes } })
      expect(outcome.status).toBe("completed")
      expect(outcome.steps.map((s) => [s.id, s.status])).toEqual([["first", "ok"], ["step-2", "ok"]])
      expect(outcome.steps[0]!.outputHash).toBe(Json.hash({ echoed: "hi" }))
      expect(calls).toEqual(["echo:hi", "echo:there"])
      const store = yield* EventStore.EventStore
      const events = yield* store.readEvents("acme", outcome.runId)
      expect(events[0]!.payload).toMatchObject({ _tag: "RunStarted", workflow: "artana.plan" })
      expect(events.filter((e) => e.payload._tag === "ToolRequested").map((e) => e.stepKey)).toEqual(["step:first", "step:step-2"])
      const logged = PlanRunner.loggedSteps(events)
      expect(logged.map((s) => [s.id, s.tool, s.outputHash])).toEqual(outcome.steps.map((s) => [s.id, s.tool, s.outputHash]))
      expect(logged[0]!.inputHash).toBe(Json.hash({ text: "hi" }))
      expect(events[events.length - 1]!.payload).toMatchObject({ _tag: "RunCompleted", output: { steps: outcome.steps } })
    }).pipe(Effect.provide(layer(tools)))
  })

  it.effect("on_error: stop — a denied step fails the run and later steps never run", () => {
    const { calls, tools } = makeTools()
    return Effect.gen(function*() {
      const outcome = yield* PlanRunner.run({ tenant, input: { plan: THREE } })
      expect(outcome).toMatchObject({ status: "failed", failure: { tag: "PolicyDenied" } })
      expect(outcome.steps.map((s) => s.status)).toEqual(["ok", "denied"])
      expect(calls).toEqual(["echo:one"])
      const store = yield* EventStore.EventStore
      expect((yield* store.getRun("acme", outcome.runId)).status).toBe("failed")
      const logged = PlanRunner.loggedSteps(yield* store.readEvents("acme", outcome.runId))
      expect(logged[1]!.denial).toEqual({ reason: "not in the allowlist", middleware: "test-policy", capability: undefined })
    }).pipe(Effect.provide(layer(tools)))
  })

  it.effect("on_error: continue — denied and failed steps are recorded and the run completes", () => {
    const { calls, tools } = makeTools()
    const p = plan("on_error: continue\nsteps:\n  - { id: a, tool: boom }\n  - { id: b, tool: secret }\n  - { id: c, tool: echo, args: { text: x } }\n")
    return Effect.gen(function*() {
      const outcome = yield* PlanRunner.run({ tenant, input: { plan: p } })
      expect(outcome.status).toBe("completed")
      expect(outcome.steps.map((s) => [s.id, s.status, s.error])).toEqual([["a", "failed", "exploded"], ["b", "denied", "not in the allowlist"], ["c", "ok", undefined]])
      expect(calls).toEqual(["boom", "echo:x"])
    }).pipe(Effect.provide(layer(tools)))
  })

  it.effect("a plan naming an unknown tool or bad arguments writes nothing", () => {
    const { calls, tools } = makeTools()
    return Effect.gen(function*() {
      const unknown = yield* Effect.flip(PlanRunner.run({ tenant, input: { plan: plan("steps: [{ tool: nope }]") } }))
      expect(unknown).toMatchObject({ _tag: "PlanError", kind: "unknown_tool" })
      const bad = yield* Effect.flip(PlanRunner.run({ tenant, input: { plan: plan("steps: [{ tool: echo, args: { text: 1 } }]") } }))
      expect(bad).toMatchObject({ _tag: "PlanError", kind: "invalid_arguments", path: "$.steps[0].args.text" })
      const store = yield* EventStore.EventStore
      expect(yield* store.listRuns("acme")).toEqual([])
      expect(calls).toEqual([])
    }).pipe(Effect.provide(layer(tools)))
  })

  it.effect("an existing run id continues that run only with the same plan", () => {
    const { calls, tools } = makeTools()
    const p = plan("steps: [{ tool: echo, args: { text: once } }]")
    return Effect.gen(function*() {
      const first = yield* PlanRunner.run({ runId: "r1", tenant, input: { plan: p } })
      const again = yield* PlanRunner.run({ runId: "r1", tenant, input: { plan: p } })
      expect(again).toEqual({ runId: "r1", status: "completed", steps: first.steps })
      expect(calls).toEqual(["echo:once"])
      const other = yield* Effect.flip(PlanRunner.run({ runId: "r1", tenant, input: { plan: plan("steps: [{ tool: echo, args: { text: twice } }]") } }))
      expect(other).toMatchObject({ _tag: "PlanMismatch", runId: "r1" })
    }).pipe(Effect.provide(layer(tools)))
  })
})

describe("PlanRunner.replay", () => {
  it.effect("replays from the log: no tool runs, nothing is written, output hashes equal the logged ones", () => {
    const { calls, tools } = makeTools()
    const p = plan("on_error: continue\nsteps:\n  - { id: a, tool: echo, args: { text: one } }\n  - { id: b, tool: boom }\n  - { id: c, tool: secret }\n")
    return Effect.gen(function*() {
      const original = yield* PlanRunner.run({ tenant, input: { plan: p } })
      const store = yield* EventStore.EventStore
      const before = yield* store.readEvents("acme", original.runId)
      calls.length = 0
      const replayed = yield* PlanRunner.replay({ tenantId: "acme", runId: original.runId })
      expect(calls).toEqual([])
      expect(replayed.status).toBe("completed")
      expect(replayed.steps.map((s) => s.outputHash)).toEqual(original.steps.map((s) => s.outputHash))
      for (const s of replayed.steps) expect(s.loggedOutputHash).toBe(s.outputHash)
      expect(yield* store.readEvents("acme", original.runId)).toEqual(before)
    }).pipe(Effect.provide(layer(tools)))
  })

  it.effect("a stopped run replays to the same failure", () => {
    const { calls, tools } = makeTools()
    return Effect.gen(function*() {
      const original = yield* PlanRunner.run({ tenant, input: { plan: THREE } })
      calls.length = 0
      const replayed = yield* PlanRunner.replay({ tenantId: "acme", runId: original.runId })
      expect(replayed).toMatchObject({ status: "failed", failure: { tag: "PolicyDenied" } })
      expect(replayed.steps.map((s) => s.outputHash)).toEqual(original.steps.map((s) => s.outputHash))
      expect(calls).toEqual([])
    }).pipe(Effect.provide(layer(tools)))
  })

  it.effect("a plan that does not match the log is a PlanMismatch naming the step", () => {
    const { tools } = makeTools()
    const p = plan("steps:\n  - { id: a, tool: echo, args: { text: one } }\n  - { id: b, tool: echo, args: { text: two } }\n")
    return Effect.gen(function*() {
      const { runId } = yield* PlanRunner.run({ tenant, input: { plan: p } })
      const changedArgs = yield* Effect.flip(PlanRunner.replay({ tenantId: "acme", runId, plan: plan("steps:\n  - { id: a, tool: echo, args: { text: one } }\n  - { id: b, tool: echo, args: { text: TWO } }\n") }))
      expect(changedArgs).toMatchObject({ _tag: "PlanMismatch", stepKey: "step:b" })
      expect(changedArgs.message).toContain('the log holds a call to tool "echo" with {"text":"two"}')
      const renamed = yield* Effect.flip(PlanRunner.replay({ tenantId: "acme", runId, plan: plan("steps:\n  - { id: a, tool: echo, args: { text: one } }\n  - { id: bb, tool: echo, args: { text: two } }\n") }))
      expect(renamed).toMatchObject({ _tag: "PlanMismatch", stepKey: "step:bb" })
      const shorter = yield* Effect.flip(PlanRunner.replay({ tenantId: "acme", runId, plan: plan("steps:\n  - { id: a, tool: echo, args: { text: one } }\n") }))
      expect(shorter).toMatchObject({ _tag: "PlanMismatch" })
      const longer = yield* Effect.flip(PlanRunner.replay({ tenantId: "acme", runId, plan: plan("steps:\n  - { id: a, tool: echo, args: { text: one } }\n  - { id: b, tool: echo, args: { text: two } }\n  - { id: c, tool: echo, args: { text: three } }\n") }))
      expect(longer).toMatchObject({ _tag: "PlanMismatch", stepKey: "step:c" })
      // The same plan replays.
      expect((yield* PlanRunner.replay({ tenantId: "acme", runId, plan: p })).status).toBe("completed")
    }).pipe(Effect.provide(layer(tools)))
  })

  it.effect("a missing run, or another workflow's run, is refused", () => {
    const { tools } = makeTools()
    return Effect.gen(function*() {
      expect(yield* Effect.flip(PlanRunner.replay({ tenantId: "acme", runId: "nope" }))).toMatchObject({ _tag: "RunNotFound" })
      const kernel = yield* Kernel.Kernel
      yield* kernel.callTool({ runId: "direct", tenant, tool: "echo", args: { text: "x" } })
      expect(yield* Effect.flip(PlanRunner.replay({ tenantId: "acme", runId: "direct" }))).toMatchObject({ _tag: "NotAPlanRun", workflow: "artana.callTool" })
    }).pipe(Effect.provide(layer(tools)))
  })
})
