import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Schema } from "effect"
import { Chat, Errors, EventStore, Kernel, Tool, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { kernelLayer, makeTools, tenant } from "./fixtures.js"

const Decision = Schema.Struct({ approved: Schema.Boolean, reason: Schema.String })

const events = (runId: string) =>
  Effect.flatMap(EventStore.EventStore, (s) => s.readEvents(tenant.tenantId, runId))
const types = (runId: string) => Effect.map(events(runId), (es) => es.map((e) => e.type))

describe("Kernel.chat", () => {
  it.effect("runs model -> tool -> model, decodes the output and logs every step", () => {
    const { all, counter } = makeTools()
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* kernel.chat({
        runId: "chat-1",
        tenant,
        messages: [Chat.user("Can acc-1 afford 100?")],
        outputSchema: Decision
      })
      expect(result.status).toBe("completed")
      if (result.status !== "completed") return
      expect(result.output.output).toEqual({ approved: true, reason: "balance 1200" })
      expect(counter.calls).toEqual(["get_balance:chat-1/tool:1"])
      expect(yield* types("chat-1")).toEqual([
        "RunStarted", "ModelRequested", "ModelCompleted", "ToolRequested", "ToolCompleted",
        "ModelRequested", "ModelCompleted", "RunCompleted"
      ])
      // The tool the tenant lacks (transfer) was stripped before the request reached the model.
      const scripted = yield* ScriptedModel.ScriptedModel
      expect(scripted.requests()[0]!.tools.map((t) => t.name)).toEqual(["get_balance", "notify"])
      expect(scripted.requests()[0]!.outputFormat?.schema).toMatchObject({ type: "object", required: ["approved", "reason"] })
      const report = yield* kernel.verify({ tenantId: tenant.tenantId, runId: "chat-1" })
      expect(report.ok).toBe(true)
    }).pipe(Effect.provide(kernelLayer([
      ScriptedModel.toolCall("get_balance", { accountId: "acc-1" }),
      ScriptedModel.json({ approved: true, reason: "balance 1200" })
    ], all)))
  })

  it.effect("re-executing a completed run returns the logged result without calling model or tools", () => {
    const { all, counter } = makeTools()
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const scripted = yield* ScriptedModel.ScriptedModel
      const options = { runId: "chat-2", tenant, messages: [Chat.user("hi")], outputSchema: Decision }
      const first = yield* kernel.chat(options)
      const again = yield* kernel.chat(options)
      expect(again).toEqual(first)
      expect(scripted.calls()).toBe(2)
      expect(counter.count()).toBe(1)
    }).pipe(Effect.provide(kernelLayer([
      ScriptedModel.toolCall("get_balance", { accountId: "acc-1" }),
      ScriptedModel.json({ approved: false, reason: "no" })
    ], all)))
  })

  it.effect("invalid tool arguments are logged with their path, returned to the model, and the handler does not run", () => {
    const { all, counter } = makeTools()
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const scripted = yield* ScriptedModel.ScriptedModel
      const result = yield* kernel.chat({ runId: "bad-args", tenant, messages: [Chat.user("x")] })
      expect(result.status).toBe("completed")
      expect(counter.count()).toBe(0)
      const failed = (yield* events("bad-args")).find((e) => e.type === "ToolFailed")!.payload
      expect(failed).toMatchObject({ _tag: "ToolFailed", kind: "invalid_arguments", path: "$.accountId" })
      const toolMessage = scripted.requests()[1]!.messages.find((m) => m.role === "tool")!
      expect(toolMessage.content).toContain("InvalidToolArguments")
      expect(toolMessage.content).toContain("$.accountId")
    }).pipe(Effect.provide(kernelLayer([
      ScriptedModel.toolCall("get_balance", { accountId: "x" }),
      ScriptedModel.text("sorry")
    ], all)))
  })

  it.effect("malformed JSON and unknown tool names from the model are answered with errors, nothing runs", () => {
    const { all, counter } = makeTools()
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* kernel.chat({ runId: "bad-calls", tenant, messages: [Chat.user("x")] })
      expect(counter.count()).toBe(0)
      const failures = (yield* events("bad-calls")).flatMap((e) => (e.payload._tag === "ToolFailed" ? [e.payload] : []))
      expect(failures.map((f) => f.kind)).toEqual(["invalid_arguments", "unknown_tool"])
      expect(failures[0]!.error).toContain("not valid JSON")
      expect(failures[1]!.error).toContain("delete_everything")
    }).pipe(Effect.provide(kernelLayer([
      { content: null, toolCalls: [{ name: "get_balance", arguments: "{\"accountId\": " }, { name: "delete_everything", arguments: {} }] },
      ScriptedModel.text("done")
    ], all)))
  })

  it.effect("a call to a tool the tenant lacks is PolicyDenied and never executed", () => {
    const { all, counter } = makeTools()
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* kernel.chat({ runId: "denied", tenant, messages: [Chat.user("move money")] })
      expect(counter.calls).toEqual([])
      const types = (yield* events("denied")).map((e) => e.type)
      expect(types).toContain("PolicyDenied")
      const denied = (yield* events("denied")).find((e) => e.payload._tag === "PolicyDenied")!.payload
      expect(denied).toMatchObject({ tool: "transfer", capability: "finance:write" })
    }).pipe(Effect.provide(kernelLayer([
      ScriptedModel.toolCall("transfer", { from: "a", to: "b", amount: 5 }),
      ScriptedModel.text("could not")
    ], all)))
  })

  it.effect("a handler that denies the call as it runs (PolicyDenied) is logged as a denial; a replay gives the same", () => {
    let ran = 0
    const guarded = Tool.make({
      name: "fetch_url",
      description: "Fetches a URL, unless it resolves somewhere forbidden",
      parameters: Schema.Struct({ url: Schema.String }),
      idempotent: true,
      handler: ({ url }) =>
        Effect.suspend(() => {
          ran++
          return Effect.fail(new Errors.PolicyDenied({ tool: "fetch_url", reason: `${url} resolves to 127.0.0.1` }))
        })
    })
    const workflow = Workflow.make({
      name: "fetch",
      input: Schema.Null,
      output: Schema.String,
      run: (_, ctx) => Effect.map(Effect.flip(ctx.tool(guarded, { url: "http://rebind.test/" })), (e) => `${e._tag}: ${e.message}`)
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const done = yield* kernel.execute(workflow, { runId: "runtime-denied", tenant, input: null })
      expect(done).toEqual({ status: "completed", runId: "runtime-denied", output: "PolicyDenied: call to \"fetch_url\" denied: http://rebind.test/ resolves to 127.0.0.1" })
      const payloads = (yield* events("runtime-denied")).map((e) => e.payload)
      expect(payloads.map((p) => p._tag)).toEqual(["RunStarted", "ToolRequested", "PolicyDenied", "ToolFailed", "RunCompleted"])
      expect(payloads[2]).toEqual({ _tag: "PolicyDenied", tool: "fetch_url", reason: "http://rebind.test/ resolves to 127.0.0.1" })
      expect(payloads[3]).toMatchObject({ _tag: "ToolFailed", kind: "denied", error: "http://rebind.test/ resolves to 127.0.0.1" })
      expect(yield* kernel.replay(workflow, { tenantId: tenant.tenantId, runId: "runtime-denied" })).toEqual(done)
      expect(ran).toBe(1)
    }).pipe(Effect.provide(kernelLayer([], [guarded], { kernel: { workflows: [workflow] } })))
  })

  it.effect("an answer that does not decode is re-asked, then fails with OutputDecodeError after the bound", () => {
    const { all } = makeTools()
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const ok = yield* kernel.chat({ runId: "reask", tenant, messages: [Chat.user("x")], outputSchema: Decision })
      expect(ok.status === "completed" && ok.output.output.approved).toBe(true)
      const failed = yield* Effect.either(kernel.chat({ runId: "reask-fail", tenant, messages: [Chat.user("x")], outputSchema: Decision, maxDecodeRetries: 1 }))
      expect(Either.isLeft(failed) && failed.left._tag).toBe("OutputDecodeError")
      const run = yield* Effect.flatMap(EventStore.EventStore, (s) => s.getRun(tenant.tenantId, "reask-fail"))
      expect(run.status).toBe("failed")
    }).pipe(Effect.provide(kernelLayer([
      ScriptedModel.text("not json"),
      ScriptedModel.json({ approved: true, reason: "fine" }),
      ScriptedModel.json({ approved: "yes" }),
      ScriptedModel.json({ approved: "still no" })
    ], all)))
  })

  it.effect("budget: crossing the tenant's limit writes BudgetExceeded and fails the run", () => {
    const { all } = makeTools()
    const poor = { ...tenant, budgetUsdLimit: 0.01 }
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* Effect.either(kernel.chat({ runId: "budget", tenant: poor, messages: [Chat.user("x")] }))
      expect(Either.isLeft(result) && result.left._tag).toBe("BudgetExceeded")
      const logged = yield* types("budget")
      expect(logged.slice(-2)).toEqual(["BudgetExceeded", "RunFailed"])
      const run = yield* Effect.flatMap(EventStore.EventStore, (s) => s.getRun(tenant.tenantId, "budget"))
      expect(run.costUsd).toBeCloseTo(0.02)
    }).pipe(Effect.provide(kernelLayer([
      ScriptedModel.toolCall("get_balance", { accountId: "acc-1" }, { costUsd: 0.02 }),
      ScriptedModel.text("unreachable")
    ], all)))
  })
})

describe("Kernel workflows", () => {
  const Input = Schema.Struct({ amount: Schema.Number })
  const Approval = Schema.Struct({ approved: Schema.Boolean, by: Schema.String })

  const makeWorkflow = (tools: ReturnType<typeof makeTools>) =>
    Workflow.make({
      name: "transfer",
      input: Input,
      output: Schema.String,
      run: ({ amount }, ctx) =>
        Effect.gen(function*() {
          const balance = yield* ctx.tool(tools.getBalance, { accountId: "acc-1" })
          const stamp = yield* ctx.now()
          const draw = yield* ctx.random()
          const memo = yield* ctx.step("compute", Effect.succeed(balance.balance - amount), Schema.Number)
          if (amount > 100) {
            const approval = yield* ctx.pauseForHuman({ reason: `approve ${amount}`, schema: Approval })
            if (!approval.approved) return "rejected"
          }
          yield* ctx.tool(tools.notify, { text: `moved ${amount}` })
          return `done ${memo} ${stamp >= 0} ${draw < 1}`
        })
    })

  it.effect("pause, invalid response (nothing written), valid response, finish; replay calls nothing", () => {
    const tools = makeTools()
    const workflow = makeWorkflow(tools)
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      const paused = yield* kernel.execute(workflow, { runId: "wf-1", tenant, input: { amount: 500 } })
      expect(paused.status).toBe("paused")
      const before = yield* store.getRun(tenant.tenantId, "wf-1")
      expect(before.status).toBe("paused")
      const bad = yield* Effect.either(kernel.resume({ tenantId: tenant.tenantId, runId: "wf-1", response: { approved: "yes" } }))
      expect(Either.isLeft(bad) && bad.left).toMatchObject({ _tag: "InvalidHumanResponse" })
      expect(Either.isLeft(bad) && String(bad.left)).toContain("approved")
      expect((yield* store.getRun(tenant.tenantId, "wf-1")).headSeq).toBe(before.headSeq)
      const done = yield* kernel.resume({ tenantId: tenant.tenantId, runId: "wf-1", response: { approved: true, by: "ann" }, respondedBy: "ann@acme" })
      expect(done).toEqual({ status: "completed", runId: "wf-1", output: "done 700 true true" })
      // Who answered is logged with the answer, as an approval logs its approver.
      const responded = (yield* store.readEvents(tenant.tenantId, "wf-1")).find((e) => e.payload._tag === "HumanResponded")?.payload
      expect(responded).toMatchObject({ _tag: "HumanResponded", payload: { approved: true, by: "ann" }, respondedBy: "ann@acme" })
      expect(tools.counter.calls).toEqual(["get_balance:wf-1/tool:0", "notify:moved 500"])
      const replayed = yield* kernel.replay(workflow, { tenantId: tenant.tenantId, runId: "wf-1" })
      expect(replayed).toEqual(done)
      expect(tools.counter.count()).toBe(2)
      expect((yield* kernel.verify({ tenantId: tenant.tenantId, runId: "wf-1" })).ok).toBe(true)
    }).pipe(Effect.provide(kernelLayer([], tools.all, { kernel: { workflows: [workflow] } })))
  })

  it.effect("NonDeterminism when the code changes between runs, naming both steps", () => {
    const tools = makeTools()
    const original = makeWorkflow(tools)
    const changed = Workflow.make({
      name: "transfer",
      input: Input,
      output: Schema.String,
      run: (_input, ctx) => Effect.as(ctx.tool(tools.notify, { text: "first" }), "x")
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* kernel.execute(original, { runId: "wf-nd", tenant, input: { amount: 500 } })
      const result = yield* Effect.either(kernel.resume({ tenantId: tenant.tenantId, runId: "wf-nd", response: { approved: true, by: "x" } }).pipe(
        Effect.provide(Layer.empty)
      ))
      expect(Either.isRight(result)).toBe(true)
      const diverged = yield* Effect.either(kernel.replay(changed, { tenantId: tenant.tenantId, runId: "wf-nd" }))
      expect(Either.isLeft(diverged) && diverged.left).toMatchObject({ _tag: "NonDeterminism", stepKey: "tool:0" })
      expect(Either.isLeft(diverged) && String(diverged.left.message)).toMatch(/get_balance.*notify/)
    }).pipe(Effect.provide(kernelLayer([], tools.all, { kernel: { workflows: [original] } })))
  })

  it.effect("a crash after ToolRequested: an idempotent tool re-runs with the same key; a non-idempotent one needs reconciliation", () => {
    let crash = true
    const calls: Array<string> = []
    const flaky = (idempotent: boolean) =>
      Tool.make({
        name: idempotent ? "charge_idem" : "charge",
        description: "charges",
        parameters: Schema.Struct({ cents: Schema.Number }),
        idempotent,
        handler: ({ cents }, ctx) =>
          Effect.suspend(() => {
            calls.push(`${ctx.idempotencyKey}:${cents}`)
            // Simulates the process dying mid-handler: the execution stops with no outcome written.
            return crash ? Effect.interrupt : Effect.succeed(cents)
          })
      })
    const idem = flaky(true)
    const plain = flaky(false)
    const workflow = (tool: Tool.Tool<{ readonly cents: number }, unknown>) =>
      Workflow.make({
        name: `pay-${tool.name}`,
        input: Schema.Null,
        output: Schema.Unknown,
        run: (_input, ctx) => ctx.tool(tool, { cents: 5 })
      })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      for (const [tool, runId] of [[idem, "in-doubt-idem"], [plain, "in-doubt"]] as const) {
        crash = true
        const w = workflow(tool)
        const crashed = yield* Effect.exit(kernel.execute(w, { runId, tenant, input: null }))
        expect(crashed._tag).toBe("Failure")
        expect((yield* store.getRun(tenant.tenantId, runId)).status).toBe("running")
        crash = false
        const resumed = yield* kernel.execute(w, { runId, tenant, input: null })
        if (tool.idempotent) {
          expect(resumed).toEqual({ status: "completed", runId, output: 5 })
        } else {
          expect(resumed).toMatchObject({ status: "needs_reconciliation", stepKey: "tool:0", tool: "charge" })
          expect((yield* store.getRun(tenant.tenantId, runId)).status).toBe("needs_reconciliation")
          // Still settled only by a person: another execute does not run the tool.
          expect((yield* kernel.execute(w, { runId, tenant, input: null })).status).toBe("needs_reconciliation")
          // A caller that checked another step settles nothing.
          const stale = yield* Effect.flip(kernel.reconcile({ tenantId: tenant.tenantId, runId, stepKey: "tool:7", outcome: { ok: true, result: 5 } }))
          expect(stale).toMatchObject({ _tag: "InvalidRunState", status: "in doubt at step tool:0", expected: "in doubt at step tool:7" })
          expect((yield* store.getRun(tenant.tenantId, runId)).status).toBe("needs_reconciliation")
          yield* kernel.reconcile({ tenantId: tenant.tenantId, runId, stepKey: "tool:0", outcome: { ok: true, result: 5 } })
          expect(yield* kernel.execute(w, { runId, tenant, input: null })).toEqual({ status: "completed", runId, output: 5 })
        }
        expect((yield* kernel.verify({ tenantId: tenant.tenantId, runId })).ok).toBe(true)
      }
      expect(calls).toEqual([
        "in-doubt-idem/tool:0:5",
        "in-doubt-idem/tool:0:5",
        "in-doubt/tool:0:5"
      ])
    }).pipe(Effect.provide(kernelLayer([], [])))
  })

  it.effect("a tool that waits on a run in doubt (WaitingOnRun): its run and their parents wait, naming the path; settled, a resume runs the tool again and the lineage completes", () => {
    let crash = true
    const charges: Array<string> = []
    const charge = Tool.make({
      name: "charge",
      description: "charges",
      parameters: Schema.Struct({ cents: Schema.Number }),
      handler: ({ cents }, ctx) =>
        Effect.suspend(() => {
          charges.push(ctx.idempotencyKey)
          // The side effect happened; the process dies before its outcome is logged.
          return crash ? Effect.interrupt : Effect.succeed(cents)
        })
    })
    const leaf = Workflow.make({ name: "leaf", input: Schema.Null, output: Schema.Number, run: (_input, ctx) => ctx.tool(charge, { cents: 5 }) })
    // A tool that runs a workflow as a child run, as a sub-agent does: the child's id follows from the call's key.
    const delegating = (kernel: Kernel.Service, name: string, child: Workflow.Workflow<null, number, unknown>) =>
      Tool.make({
        name,
        description: `runs ${child.name}`,
        parameters: Schema.Struct({}),
        success: Schema.Number,
        idempotent: true,
        handler: (_args, ctx) =>
          Effect.gen(function*() {
            const childId = `${ctx.idempotencyKey}>child`
            const result = yield* kernel.execute(child, { runId: childId, tenant: ctx.tenant, parentRunId: ctx.runId, input: null })
            if (result.status === "completed") return result.output + 1
            if (result.status === "needs_reconciliation") {
              return yield* new Errors.WaitingOnRun({ runId: childId, stepKey: result.stepKey, tool: result.tool, waitingOn: result.waitingOn })
            }
            return yield* Effect.fail(`child ${result.status}`)
          })
      })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      const mid = Workflow.make({ name: "mid", input: Schema.Null, output: Schema.Number, run: (_input, ctx) => ctx.tool(delegating(kernel, "to_leaf", leaf), {}) })
      const root = Workflow.make({ name: "root", input: Schema.Null, output: Schema.Number, run: (_input, ctx) => ctx.tool(delegating(kernel, "to_mid", mid), {}) })
      const midId = "wait-root/tool:0>child"
      const leafId = `${midId}/tool:0>child`
      expect((yield* Effect.exit(kernel.execute(root, { runId: "wait-root", tenant, input: null })))._tag).toBe("Failure")
      crash = false
      const path = [{ runId: midId, stepKey: "tool:0", tool: "to_leaf" }, { runId: leafId, stepKey: "tool:0", tool: "charge" }]
      const waiting = yield* kernel.execute(root, { runId: "wait-root", tenant, input: null })
      expect(waiting).toEqual({ status: "needs_reconciliation", runId: "wait-root", stepKey: "tool:0", tool: "to_mid", waitingOn: path })
      for (const id of ["wait-root", midId, leafId]) expect((yield* store.getRun(tenant.tenantId, id)).status).toBe("needs_reconciliation")
      expect(yield* types("wait-root")).toEqual(["RunStarted", "ToolRequested", "RunResumed", "ReconciliationRequired"])
      expect(yield* EventStore.reconciliationPath(store, tenant.tenantId, "wait-root")).toEqual([{ runId: "wait-root", stepKey: "tool:0", tool: "to_mid" }, ...path])
      // The middle run reports where it waits too; asking again writes nothing while the step in doubt is unsettled.
      expect(yield* kernel.execute(mid, { runId: midId, tenant, input: null })).toEqual({ status: "needs_reconciliation", runId: midId, stepKey: "tool:0", tool: "to_leaf", waitingOn: path.slice(1) })
      const heads = yield* Effect.forEach(["wait-root", midId, leafId], (id) => Effect.map(store.getRun(tenant.tenantId, id), (r) => r.headSeq))
      expect((yield* kernel.execute(root, { runId: "wait-root", tenant, input: null })).status).toBe("needs_reconciliation")
      expect(yield* Effect.forEach(["wait-root", midId, leafId], (id) => Effect.map(store.getRun(tenant.tenantId, id), (r) => r.headSeq))).toEqual(heads)
      // A run that only waits cannot be settled by hand: the person is sent to the step in doubt.
      const refused = yield* Effect.flip(kernel.reconcile({ tenantId: tenant.tenantId, runId: "wait-root", outcome: { ok: true, result: 7 } }))
      expect(refused).toMatchObject({ _tag: "InvalidRunState", runId: "wait-root" })
      expect(refused.message).toContain(`reconcile run ${leafId} at step tool:0`)
      yield* kernel.reconcile({ tenantId: tenant.tenantId, runId: leafId, stepKey: "tool:0", outcome: { ok: true, result: 5 } })
      expect(yield* kernel.execute(root, { runId: "wait-root", tenant, input: null })).toEqual({ status: "completed", runId: "wait-root", output: 7 })
      expect(charges).toEqual([`${leafId}/tool:0`])
      expect(yield* types("wait-root")).toEqual(["RunStarted", "ToolRequested", "RunResumed", "ReconciliationRequired", "RunResumed", "ToolCompleted", "RunCompleted"])
      for (const id of ["wait-root", midId, leafId]) {
        expect((yield* store.getRun(tenant.tenantId, id)).status).toBe("completed")
        expect((yield* kernel.verify({ tenantId: tenant.tenantId, runId: id })).ok).toBe(true)
      }
      expect(yield* kernel.replay(root, { tenantId: tenant.tenantId, runId: "wait-root" })).toEqual({ status: "completed", runId: "wait-root", output: 7 })
    }).pipe(Effect.provide(kernelLayer([], [])))
  })

  it.effect("a response to a run that is no longer paused is refused, and the step after the pause ran once", () => {
    const tools = makeTools()
    const workflow = makeWorkflow(tools)
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* kernel.execute(workflow, { runId: "twice", tenant, input: { amount: 500 } })
      const first = yield* kernel.resume({ tenantId: tenant.tenantId, runId: "twice", response: { approved: true, by: "a" } })
      expect(first.status).toBe("completed")
      const second = yield* Effect.either(kernel.resume({ tenantId: tenant.tenantId, runId: "twice", response: { approved: false, by: "b" } }))
      expect(Either.isLeft(second) && second.left).toMatchObject({ _tag: "InvalidRunState", status: "completed" })
      expect(tools.counter.calls.filter((c) => c.startsWith("notify"))).toHaveLength(1)
    }).pipe(Effect.provide(kernelLayer([], tools.all, { kernel: { workflows: [workflow] } })))
  })

  it.effect("verify names the first tampered seq and catches a truncated tail against an exported head", () => {
    const tools = makeTools()
    const workflow = makeWorkflow(tools)
    // A store that serves seq 3 altered once `tampered` is set (the in-memory store hands out copies, so the change
    // is made where a store's bytes would be read).
    let tampered = false
    const store = Layer.effect(EventStore.EventStore, Effect.map(EventStore.makeMemory, (memory): EventStore.Service => ({
      ...memory,
      readEvents: (tenantId, runId, fromSeq) =>
        Effect.map(memory.readEvents(tenantId, runId, fromSeq), (events) =>
          tampered
            ? events.map((e) => (e.seq === 3 && e.payload._tag === "ToolCompleted" ? { ...e, payload: { ...e.payload, result: { accountId: "acc-1", balance: 99999 } } } : e))
            : events)
    })))
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* kernel.execute(workflow, { runId: "tamper", tenant, input: { amount: 1 } })
      const report = yield* kernel.verify({ tenantId: tenant.tenantId, runId: "tamper" })
      expect(report.ok).toBe(true)
      tampered = true
      const broken = yield* kernel.verify({ tenantId: tenant.tenantId, runId: "tamper" })
      expect(broken).toMatchObject({ ok: false, firstBrokenSeq: 3 })
      expect(yield* Effect.flip(kernel.readEvents({ tenantId: tenant.tenantId, runId: "tamper" }))).toMatchObject({ _tag: "LogTampered", seq: 3 })
      tampered = false
      const truncated = yield* kernel.verify({ tenantId: tenant.tenantId, runId: "tamper", head: { seq: report.headSeq + 2, hash: "f".repeat(64) } })
      expect(truncated.ok).toBe(false)
      expect(truncated.reason).toContain("truncated")
    }).pipe(Effect.provide(kernelLayer([], tools.all, { store })))
  })
})
