// Sub-agents: a child run per call (`parent::sub_agent::idempotencyKey`), the parent's tenant, the same middleware,
// the root's budget; the lineage read back from the store as a tree.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import { EventStore, Kernel, type Middleware, Tenant } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { AutonomousAgent, SubAgent } from "@artana/agent"
import { agentLayer, eventsOf, makeTools, scripted, tenant } from "./fixtures.js"

/** Notes every model call it sees, so a test can tell which runs went through it. */
const tracer: Middleware.Interceptor = {
  name: "tracer",
  beforeModel: (request, ctx) => Effect.as(ctx.note("tracer", "model", { run: ctx.runId }), request)
}

const makeAgents = () => {
  const { effects, querySales } = makeTools()
  const researcher = AutonomousAgent.make({ name: "researcher", instructions: "You research sales figures.", tools: [querySales], memory: false })
  const analyst = AutonomousAgent.make({
    name: "analyst",
    instructions: "You write reports; delegate research.",
    tools: [SubAgent.asTool({ name: "research", description: "Researches a sales question and answers in one sentence.", agent: researcher })],
    memory: false
  })
  return { effects, researcher, analyst }
}

describe("SubAgent.asTool", () => {
  it.effect("a child acts in its parent's name: once the parent's lease has run out, no handler of the child starts", () => {
    const { analyst, effects } = makeAgents()
    // The parent's lease runs out while its child runs (the process was paused): seen by the child's first model call.
    let expired = false
    const pause: Middleware.Interceptor = {
      name: "pause",
      beforeModel: (request, ctx) => Effect.sync(() => {
        if (ctx.runId !== "p-lease") expired = true
        return request
      })
    }
    return Effect.gen(function*() {
      const lease = { expiresAt: () => (expired ? 0 : Number.POSITIVE_INFINITY), signal: new AbortController().signal }
      const kernel = yield* Kernel.Kernel
      const workflow = analyst.workflow
      yield* Effect.exit(kernel.execute(workflow, { runId: "p-lease", tenant, input: { prompt: "Write the EMEA report.", model: "scripted" }, lease }))
      expect(expired).toBe(true)
      expect(effects.lines).toEqual([])
      const child = (yield* eventsOf("p-lease::sub_agent::p-lease/turn:0/tool:0")).map((e) => e.payload._tag)
      // The child stopped before its model call was sent (the lease ran out in the call's middleware), and the parent
      // heard why.
      expect(child).toEqual(["RunStarted"])
      const failed = (yield* eventsOf("p-lease")).find((e) => e.payload._tag === "ToolFailed")?.payload
      expect(failed?._tag === "ToolFailed" && failed.error).toContain("OwnershipLost")
    }).pipe(Effect.provide(agentLayer(scripted([
      ScriptedModel.toolCall("research", { task: "EMEA sales in Q3?" }),
      ScriptedModel.toolCall("query_sales", { region: "EMEA", quarter: "Q3" }),
      ScriptedModel.text("EMEA sales in Q3 were 1.2M."),
      ScriptedModel.text("EMEA made 1.2M.")
    ]), { middleware: [pause] })))
  })

  it.effect("a call is a child run: its id, the parent's tenant, the same middleware, the lineage as a tree", () => {
    const { analyst, effects } = makeAgents()
    return Effect.gen(function*() {
      const result = yield* analyst.run({ runId: "p-1", tenant, prompt: "Write the EMEA report." })
      expect(result).toMatchObject({ status: "completed", output: { output: "EMEA made 1.2M." } })
      const childId = "p-1::sub_agent::p-1/turn:0/tool:0"
      expect(effects.lines).toEqual([`query_sales ${childId}/turn:0/tool:0 EMEA/Q3`])
      const store = yield* EventStore.EventStore
      const child = yield* store.getRun(tenant.tenantId, childId)
      expect(child).toMatchObject({ workflow: "agent:researcher", parentRunId: "p-1", rootRunId: "p-1", status: "completed" })
      const started = (yield* eventsOf(childId))[0]!.payload
      expect(started._tag === "RunStarted" && started.tenant).toEqual(tenant)
      expect(started._tag === "RunStarted" && started.input).toEqual({ prompt: "EMEA sales in Q3?", model: "scripted" })
      // The parent got the child's answer as the tool's result.
      const completed = (yield* eventsOf("p-1")).find((e) => e.payload._tag === "ToolCompleted")!.payload
      expect(completed).toMatchObject({ tool: "research", result: "EMEA sales in Q3 were 1.2M." })
      // The same middleware ran on the child's model calls.
      const notes = (yield* eventsOf(childId)).filter((e) => e.payload._tag === "MiddlewareNote")
      expect(notes).toHaveLength(2)
      // The lineage, from either end.
      const tree = yield* SubAgent.lineage({ tenantId: tenant.tenantId, runId: childId })
      expect(tree.run.runId).toBe("p-1")
      expect(tree.children.map((c) => c.run.runId)).toEqual([childId])
      expect(SubAgent.formatTree(tree)).toMatch(/^p-1 {2}agent:analyst {2}completed {2}\$0\.000000\n {2}└ p-1::sub_agent::p-1\/turn:0\/tool:0 {2}agent:researcher {2}completed/)
      expect(yield* SubAgent.lineage({ tenantId: tenant.tenantId, runId: "p-1" })).toEqual(tree)
      // The replay of the parent runs no child.
      expect(yield* analyst.replay({ tenantId: tenant.tenantId, runId: "p-1" })).toEqual(result)
      expect((yield* store.listRuns(tenant.tenantId, { rootRunId: "p-1" }))).toHaveLength(2)
      expect((yield* ScriptedModel.ScriptedModel).calls()).toBe(4)
    }).pipe(Effect.provide(agentLayer(scripted([
      ScriptedModel.toolCall("research", { task: "EMEA sales in Q3?" }),
      ScriptedModel.toolCall("query_sales", { region: "EMEA", quarter: "Q3" }),
      ScriptedModel.text("EMEA sales in Q3 were 1.2M."),
      ScriptedModel.text("EMEA made 1.2M.")
    ]), { middleware: [tracer] })))
  })

  it.effect("a structured child: the tool's result is its encoded output", () => {
    const { researcher } = makeAgents()
    const Figure = Schema.Struct({ region: Schema.String, revenue: Schema.NumberFromString })
    const analyst = AutonomousAgent.make({
      name: "analyst",
      instructions: "x",
      tools: [SubAgent.asTool({ name: "research", description: "Researches", agent: researcher, outputSchema: Figure, model: "small" })],
      memory: false
    })
    return Effect.gen(function*() {
      yield* analyst.run({ runId: "p-2", tenant, prompt: "EMEA?" })
      const completed = (yield* eventsOf("p-2")).find((e) => e.payload._tag === "ToolCompleted")!.payload
      expect(completed).toMatchObject({ result: { region: "EMEA", revenue: "1200000" } })
      const requests = (yield* ScriptedModel.ScriptedModel).requests()
      expect(requests[1]!.model).toBe("small")
      expect(requests[1]!.outputFormat?.schema).toMatchObject({ required: ["region", "revenue"] })
    }).pipe(Effect.provide(agentLayer(scripted([
      ScriptedModel.toolCall("research", { task: "EMEA revenue" }),
      ScriptedModel.json({ region: "EMEA", revenue: "1200000" }),
      ScriptedModel.text("done")
    ]))))
  })

  it.effect("budget exhausted inside a sub-agent stops the whole tree", () => {
    const { analyst } = makeAgents()
    const poor = Tenant.TenantContext.make({ tenantId: "acme", capabilities: ["sales:read"], budgetUsdLimit: 0.05 })
    return Effect.gen(function*() {
      const result = yield* Effect.either(analyst.run({ runId: "p-3", tenant: poor, prompt: "Write the report." }))
      expect(Either.isLeft(result) && result.left._tag).toBe("BudgetExceeded")
      const store = yield* EventStore.EventStore
      const runs = yield* store.listRuns(tenant.tenantId, { rootRunId: "p-3" })
      expect(runs.map((r) => r.status)).toEqual(["failed", "failed"])
      const childId = "p-3::sub_agent::p-3/turn:0/tool:0"
      // The child crossed the limit after its second call; the parent was refused its next call before making it.
      const exceeded = (id: string) => Effect.map(eventsOf(id), (es) => es.flatMap((e) => (e.payload._tag === "BudgetExceeded" ? [e.payload.phase] : [])))
      expect(yield* exceeded(childId)).toEqual(["after_call"])
      expect(yield* exceeded("p-3")).toEqual(["before_call"])
      const parentTypes = (yield* eventsOf("p-3")).map((e) => e.type)
      expect(parentTypes.slice(-4)).toEqual(["ToolRequested", "ToolFailed", "BudgetExceeded", "RunFailed"])
      const failed = (yield* eventsOf("p-3")).find((e) => e.payload._tag === "ToolFailed")!.payload
      expect(failed).toMatchObject({ tool: "research", kind: "tool_error" })
      expect(failed._tag === "ToolFailed" && failed.error).toContain("BudgetExceeded")
      // Three model calls were made in all: the parent's first and the child's two. The spend is the lineage's.
      expect((yield* ScriptedModel.ScriptedModel).calls()).toBe(3)
      expect(runs.reduce((sum, r) => sum + r.costUsd, 0)).toBeCloseTo(0.07)
    }).pipe(Effect.provide(agentLayer(scripted([
      ScriptedModel.toolCall("research", { task: "EMEA sales in Q3?" }, { costUsd: 0.01 }),
      ScriptedModel.toolCall("query_sales", { region: "EMEA", quarter: "Q3" }, { costUsd: 0.03 }),
      ScriptedModel.text("EMEA made 1.2M.", { costUsd: 0.03 }),
      ScriptedModel.text("never asked", { costUsd: 0.01 })
    ]))))
  })
})
