// The kernel end to end on PostgreSQL: a workflow runs to a pause on one kernel (one pool), and a second
// kernel, on a pool of its own, as another worker would, resumes it from the log alone.
import { describe, expect, it } from "@effect/vitest"
import { inject } from "vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { Chat, Errors, EventStore, Kernel, Middleware, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { PgClient } from "@effect/sql-pg"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"

const pg = PgTest.server(inject("artanaPg"))
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: ["finance:read"], budgetUsdLimit: 1 })

const makeTools = () => {
  const calls: Array<string> = []
  const getBalance = Tool.make({
    name: "get_balance",
    description: "Balance of an account in USD",
    parameters: Schema.Struct({ accountId: Schema.String }),
    success: Schema.Struct({ accountId: Schema.String, balance: Schema.Number }),
    requiresCapability: "finance:read",
    idempotent: true,
    handler: ({ accountId }, ctx) =>
      Effect.sync(() => {
        calls.push(`get_balance:${ctx.idempotencyKey}`)
        return { accountId, balance: 1200 }
      })
  })
  const notify = Tool.make({
    name: "notify",
    description: "Sends a notification (not idempotent)",
    parameters: Schema.Struct({ text: Schema.String }),
    handler: ({ text }) => Effect.sync(() => {
      calls.push(`notify:${text}`)
      return "sent"
    })
  })
  return { calls, getBalance, notify }
}

const Approval = Schema.Struct({ approved: Schema.Boolean, by: Schema.String })

const makeWorkflow = (tools: ReturnType<typeof makeTools>) =>
  Workflow.make({
    name: "transfer",
    input: Schema.Struct({ amount: Schema.Number }),
    output: Schema.String,
    run: ({ amount }, ctx) =>
      Effect.gen(function*() {
        const balance = yield* ctx.tool(tools.getBalance, { accountId: "acc-1" })
        const left = yield* ctx.step("compute", Effect.succeed(balance.balance - amount), Schema.Number)
        const approval = yield* ctx.pauseForHuman({ reason: `approve ${amount}`, schema: Approval })
        if (!approval.approved) return "rejected"
        yield* ctx.tool(tools.notify, { text: `moved ${amount}` })
        return `done, ${left} left, approved by ${approval.by}`
      })
  })

/** A kernel on its own `PostgresStore` pool over `url`. */
const kernelOn = (url: string, tools: ReturnType<typeof makeTools>, script: ReadonlyArray<ScriptedModel.Reply> = []) =>
  Kernel.layer({ workflows: [makeWorkflow(tools)] }).pipe(
    Layer.provideMerge(Layer.mergeAll(
      PostgresStore.layer({ url, pool: { max: 4 } }),
      ScriptedModel.layer(script),
      ToolRegistry.layer([tools.getBalance, tools.notify]),
      Middleware.layer([])
    ))
  )

const services = (layer: ReturnType<typeof kernelOn>) =>
  Effect.map(Layer.build(layer), (context) => ({
    kernel: Context.get(context, Kernel.Kernel),
    store: Context.get(context, EventStore.EventStore),
    pg: Context.get(context, PgClient.PgClient)
  }))

describe.skipIf(pg.url === undefined)(`the kernel on PostgreSQL (${pg.description})`, () => {
  it.scoped("a tool step and a pause on one worker; resumed by a second kernel on another pool; verify ok", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const firstTools = makeTools()
      const first = yield* services(kernelOn(url, firstTools))
      const workflow = makeWorkflow(firstTools)

      const paused = yield* first.kernel.execute(workflow, { runId: "wf-1", tenant, input: { amount: 500 } })
      expect(paused).toMatchObject({ status: "paused", runId: "wf-1", reason: "approve 500" })
      expect(firstTools.calls).toEqual(["get_balance:wf-1/tool:0"])
      expect((yield* first.store.getRun("acme", "wf-1")).status).toBe("paused")

      // Another worker: its own pool, its own tool instances; nothing shared with the first but the database.
      const secondTools = makeTools()
      const second = yield* services(kernelOn(url, secondTools))
      expect(second.pg).not.toBe(first.pg)
      const done = yield* second.kernel.resume({ tenantId: "acme", runId: "wf-1", response: { approved: true, by: "ann" } })
      expect(done).toEqual({ status: "completed", runId: "wf-1", output: "done, 700 left, approved by ann" })
      // The tool step before the pause came from the log; only the step after it ran, once, on the second worker.
      expect(secondTools.calls).toEqual(["notify:moved 500"])
      expect(firstTools.calls).toEqual(["get_balance:wf-1/tool:0"])

      const types = (yield* first.store.readEvents("acme", "wf-1")).map((e) => e.type)
      expect(types).toEqual([
        "RunStarted", "ToolRequested", "ToolCompleted", "StepCompleted", "PauseRequested",
        "HumanResponded", "ToolRequested", "ToolCompleted", "RunCompleted"
      ])
      for (const kernel of [first.kernel, second.kernel]) {
        expect(yield* kernel.verify({ tenantId: "acme", runId: "wf-1" })).toMatchObject({ ok: true, events: 9 })
      }
      // A replay on the first worker returns the recorded result and runs nothing.
      expect(yield* first.kernel.replay(workflow, { tenantId: "acme", runId: "wf-1" })).toEqual(done)
      expect(firstTools.calls).toEqual(["get_balance:wf-1/tool:0"])
      expect((yield* second.store.getRun("acme", "wf-1")).status).toBe("completed")
    }))

  it.scoped("a run whose log was cut before its recorded head is refused, and none of the removed steps runs again", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const tools = makeTools()
      const { kernel, pg: sql, store } = yield* services(kernelOn(url, tools))
      const workflow = makeWorkflow(tools)
      yield* kernel.execute(workflow, { runId: "wf-1", tenant, input: { amount: 500 } })
      // The pause wrote the run's record (head seq 5); then the log loses everything after RunStarted.
      yield* sql`DELETE FROM events WHERE run_key = (SELECT run_key FROM runs WHERE run_id = 'wf-1') AND seq >= 2`
      const error = yield* Effect.flip(kernel.resume({ tenantId: "acme", runId: "wf-1", response: { approved: true, by: "ann" } }))
      expect(error).toBeInstanceOf(Errors.InvalidRunState)
      expect(String(error)).toContain("truncated (its log ends at seq 1, its run record at seq 5)")
      expect(tools.calls).toEqual(["get_balance:wf-1/tool:0"])
      expect((yield* store.readEvents("acme", "wf-1")).length).toBe(1)
      expect(yield* kernel.verify({ tenantId: "acme", runId: "wf-1" })).toMatchObject({ ok: false, firstBrokenSeq: 2 })
    }))

  it.scoped("a chat with a model and a tool call is logged, costed and verifiable on PostgreSQL", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const tools = makeTools()
      const { kernel, store } = yield* services(kernelOn(url, tools, [
        ScriptedModel.toolCall("get_balance", { accountId: "acc-1" }, { costUsd: 0.0125 }),
        ScriptedModel.text("acc-1 holds 1200 USD", { costUsd: 0.0025 })
      ]))
      const result = yield* kernel.chat({ runId: "chat-1", tenant, messages: [Chat.user("What does acc-1 hold?")] })
      expect(result.status).toBe("completed")
      expect(tools.calls).toEqual(["get_balance:chat-1/tool:1"])
      const run = yield* store.getRun("acme", "chat-1")
      expect(run).toMatchObject({ status: "completed", headSeq: 8 })
      expect(run.costUsd).toBeCloseTo(0.015, 12)
      expect((yield* kernel.verify({ tenantId: "acme", runId: "chat-1" })).ok).toBe(true)
    }))
})
