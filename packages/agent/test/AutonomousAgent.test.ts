// The agent loop on a scripted model: model step -> tool steps -> ... -> a decoded answer, every step a kernel step
// with its own key; crash recovery without repeating a tool; structured output re-asks; max turns; extensions.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Schema } from "effect"
import { Chat, Kernel, ModelPort, Pricing, type Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { AgentErrors, AutonomousAgent, ContextBuilder, type Extension } from "@artana/agent"
import { agentLayer, makeTools, scripted, stepsOf, systemOf, tenant } from "./fixtures.js"

const Report = Schema.Struct({ region: Schema.String, revenue: Schema.Number, verdict: Schema.String })

describe("AutonomousAgent", () => {
  it.effect("model -> tools -> answer decoded with the output schema; every step a kernel step with its own key; replay is exact", () => {
    const { all, effects, querySales } = makeTools()
    const analyst = AutonomousAgent.make({ name: "analyst", instructions: "You analyse sales.", tools: [querySales] })
    return Effect.gen(function*() {
      const result = yield* analyst.run({ runId: "r-1", tenant, prompt: "How did EMEA do in Q3?", outputSchema: Report })
      expect(result.status).toBe("completed")
      if (result.status !== "completed") return
      expect(result.output.output).toEqual({ region: "EMEA", revenue: 1_200_000, verdict: "strong" })
      expect(result.output).toMatchObject({ turns: 2, compactions: 0, costUsd: 0.003 })
      expect(effects.lines).toEqual(["query_sales r-1/turn:0/tool:0 EMEA/2024-Q3"])
      expect(yield* stepsOf("r-1")).toEqual([
        "RunStarted@run",
        "StepCompleted@turn:0/section:core_memory",
        "ModelRequested@turn:0", "ModelCompleted@turn:0",
        "ToolRequested@turn:0/tool:0", "ToolCompleted@turn:0/tool:0",
        "StepCompleted@turn:1/section:core_memory",
        "ModelRequested@turn:1", "ModelCompleted@turn:1",
        "RunCompleted@run"
      ])
      const model = yield* ScriptedModel.ScriptedModel
      const [first, second] = model.requests()
      // Memory at the top, then the identity; the task; the tool with its full schema and the memory tools.
      expect(systemOf(first!)).toMatch(/^\[CORE MEMORY\][\s\S]*\(empty\)\n\nYou analyse sales\.$/)
      expect(first!.messages[1]).toEqual(Chat.user("How did EMEA do in Q3?"))
      expect(first!.tools.map((t) => t.name)).toEqual(["core_memory_append", "core_memory_replace", "core_memory_search", "query_sales"])
      expect(first!.outputFormat?.schema).toMatchObject({ required: ["region", "revenue", "verdict"] })
      expect(second!.messages.slice(2).map((m) => m.role)).toEqual(["assistant", "tool"])
      // Running the same id again returns the logged result; a replay executes nothing and matches.
      expect(yield* analyst.run({ runId: "r-1", tenant, prompt: "How did EMEA do in Q3?", outputSchema: Report })).toEqual(result)
      expect(yield* analyst.replay({ tenantId: tenant.tenantId, runId: "r-1", outputSchema: Report })).toEqual(result)
      expect(model.calls()).toBe(2)
      expect(effects.lines).toHaveLength(1)
    }).pipe(Effect.provide(agentLayer(scripted([
      ScriptedModel.toolCall("query_sales", { region: "EMEA", quarter: "2024-Q3" }, { costUsd: 0.001 }),
      ScriptedModel.json({ region: "EMEA", revenue: 1_200_000, verdict: "strong" }, { costUsd: 0.002 })
    ]), { tools: all })))
  })

  it.effect("a crashed agent resumes mid-loop: completed tool calls come from the log, the loop goes on", () => {
    const { effects, querySales, sendReport } = makeTools()
    const analyst = AutonomousAgent.make({ name: "analyst", instructions: "You analyse sales.", tools: [querySales, sendReport], memory: false })
    let crash = true
    let calls = 0
    // The third model call "kills the process" the first time (the execution stops, nothing written for it).
    const model = ModelPort.make({
      defaultModel: "m",
      prices: { m: Pricing.free },
      generate: (request) =>
        Effect.suspend(() => {
          calls++
          const turn = request.messages.filter((m) => m.role === "assistant").length
          if (turn === 2 && crash) {
            crash = false
            return Effect.interrupt
          }
          const calls0 = [{ id: "c0", name: "query_sales", arguments: '{"region":"EMEA","quarter":"Q3"}' }]
          const calls1 = [{ id: "c1", name: "send_report", arguments: '{"to":"cfo@acme.example","body":"EMEA 1.2M"}' }]
          const message = turn === 0
            ? { role: "assistant" as const, content: null, toolCalls: calls0 }
            : turn === 1
            ? { role: "assistant" as const, content: null, toolCalls: calls1 }
            : { role: "assistant" as const, content: "done" }
          return Effect.succeed({ model: request.model, message, usage: { inputTokens: 1, outputTokens: 1 } })
        })
    })
    return Effect.gen(function*() {
      const crashed = yield* Effect.exit(analyst.run({ runId: "crash", tenant, prompt: "Report EMEA Q3 to the CFO." }))
      expect(crashed._tag).toBe("Failure")
      expect(effects.lines).toEqual(["query_sales crash/turn:0/tool:0 EMEA/Q3", "send_report crash/turn:1/tool:0 cfo@acme.example"])
      const resumed = yield* analyst.run({ runId: "crash", tenant, prompt: "Report EMEA Q3 to the CFO." })
      expect(resumed).toMatchObject({ status: "completed", output: { output: "done", turns: 3 } })
      // The email went once; the resumed execution asked the model only for the step it had not answered.
      expect(effects.count("send_report")).toBe(1)
      expect(effects.count("query_sales")).toBe(1)
      expect(calls).toBe(4)
      const steps = yield* stepsOf("crash")
      expect(steps.filter((s) => s === "RunResumed@run")).toHaveLength(1)
      expect(steps.filter((s) => s.startsWith("ToolRequested"))).toEqual(["ToolRequested@turn:0/tool:0", "ToolRequested@turn:1/tool:0"])
    }).pipe(Effect.provide(agentLayer(Layer.succeed(ModelPort.ModelPort, model))))
  })

  it.effect("an answer that does not decode is re-asked, then fails with OutputDecodeError; onFinish hooks see the failure", () => {
    const seen: Array<Extension.Outcome> = []
    const audit: Extension.Extension = {
      name: "audit",
      onFinish: ({ ctx, key, outcome, turns }) =>
        Effect.asVoid(ctx.step("audit", Effect.sync(() => (seen.push(outcome), turns)), Schema.Number, { key: key("audit") }))
    }
    const analyst = AutonomousAgent.make({ name: "analyst", instructions: "Answer in JSON.", extensions: [audit], maxDecodeRetries: 1, memory: false })
    return Effect.gen(function*() {
      const result = yield* Effect.either(analyst.run({ runId: "decode", tenant, prompt: "Report.", outputSchema: Report }))
      expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "OutputDecodeError", attempts: 2 })
      expect(seen).toEqual([{ _tag: "failure", errorTag: "OutputDecodeError", message: expect.stringContaining("after 2 attempt(s)") }])
      const model = yield* ScriptedModel.ScriptedModel
      expect(model.requests()[1]!.messages.at(-1)?.content).toMatch(/^Your answer did not match the required JSON schema: the answer is not JSON: not json/)
      const steps = yield* stepsOf("decode")
      expect(steps.slice(-2)).toEqual(["StepCompleted@finish:audit:audit", "RunFailed@run"])
    }).pipe(Effect.provide(agentLayer(scripted([ScriptedModel.text("not json"), ScriptedModel.json({ region: "EMEA" })]))))
  })

  it.effect("maxTurns bounds the loop: MaxTurnsExceeded", () => {
    const { querySales } = makeTools()
    const analyst = AutonomousAgent.make({ name: "analyst", instructions: "x", tools: [querySales], maxTurns: 2, memory: false })
    return Effect.gen(function*() {
      const result = yield* Effect.either(analyst.run({ runId: "turns", tenant, prompt: "loop" }))
      expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "MaxTurnsExceeded", maxTurns: 2 })
    }).pipe(Effect.provide(agentLayer(scripted([
      ScriptedModel.toolCall("query_sales", { region: "EMEA", quarter: "Q1" }),
      ScriptedModel.toolCall("query_sales", { region: "EMEA", quarter: "Q2" })
    ]), { tools: [querySales] })))
  })

  it.effect("onFinish runs durable steps after the answer (a model step of its own key); a failing hook fails the run", () => {
    const reflect: Extension.Extension = {
      name: "reflect",
      onFinish: ({ ctx, key, messages, outcome }) =>
        Effect.gen(function*() {
          if (outcome._tag !== "success") return
          const step = yield* ctx.modelStep({ messages: [Chat.system("reflect"), ...messages], tools: [], key: key("reflection") })
          if (step.message.content === "fail") return yield* new AgentErrors.ExtensionError({ extension: "reflect", reason: "asked to" })
        })
    }
    const analyst = AutonomousAgent.make({ name: "analyst", instructions: "x", extensions: [reflect], memory: false })
    return Effect.gen(function*() {
      const ok = yield* analyst.run({ runId: "hook-1", tenant, prompt: "hi" })
      expect(ok).toMatchObject({ status: "completed", output: { output: "hello", turns: 1 } })
      expect(yield* stepsOf("hook-1")).toEqual([
        "RunStarted@run", "ModelRequested@turn:0", "ModelCompleted@turn:0",
        "ModelRequested@finish:reflect:reflection", "ModelCompleted@finish:reflect:reflection", "RunCompleted@run"
      ])
      const model = yield* ScriptedModel.ScriptedModel
      // The hook is given the conversation: the task and the answer.
      expect(model.requests()[1]!.messages.slice(1)).toEqual([Chat.user("hi"), Chat.assistant("hello")])
      const failed = yield* Effect.either(analyst.run({ runId: "hook-2", tenant, prompt: "hi" }))
      expect(Either.isLeft(failed) && failed.left).toMatchObject({ _tag: "ExtensionError", extension: "reflect" })
    }).pipe(Effect.provide(agentLayer(scripted([
      ScriptedModel.text("hello"),
      ScriptedModel.text("learned nothing"),
      ScriptedModel.text("hello"),
      ScriptedModel.text("fail")
    ]))))
  })

  it("refuses definitions that cannot work", () => {
    const { querySales } = makeTools()
    expect(() => AutonomousAgent.make({ name: " ", instructions: "x" })).toThrow(/name must not be empty/)
    expect(() => AutonomousAgent.make({ name: "a", instructions: "x", tools: [querySales, querySales] })).toThrow(/two tools are named "query_sales"/)
    const clash = { ...querySales, name: "load_skill" }
    expect(() => AutonomousAgent.make({ name: "a", instructions: "x", tools: [clash] })).toThrow(/is the agent's own/)
    expect(() => AutonomousAgent.make({ name: "a", instructions: "x", sections: [ContextBuilder.text("core_memory", "x")] })).toThrow(/is the memory section's/)
    expect(() => AutonomousAgent.make({ name: "a", instructions: "x", sections: [ContextBuilder.text("s", "x"), ContextBuilder.text("s", "y")] })).toThrow(/two context sections are named "s"/)
  })

  it.effect("the agent's workflow can be registered with the kernel and driven by execute", () => {
    const analyst = AutonomousAgent.make({ name: "analyst", instructions: "x", memory: false })
    return Effect.gen(function*() {
      const workflow = analyst.workflow
      // A worker's list holds workflows of any type.
      const listed: ReadonlyArray<Workflow.Any> = [workflow]
      expect(listed[0]!.name).toBe("agent:analyst")
      const kernel = yield* Kernel.Kernel
      const result = yield* kernel.execute(workflow, { runId: "wf", tenant, input: { prompt: "hi", model: "gpt-4o-mini" } })
      expect(result).toMatchObject({ status: "completed", output: { output: "hello" } })
      const model = yield* ScriptedModel.ScriptedModel
      expect(model.requests()[0]!.model).toBe("gpt-4o-mini")
    }).pipe(Effect.provide(agentLayer(scripted([ScriptedModel.text("hello")]))))
  })
})


