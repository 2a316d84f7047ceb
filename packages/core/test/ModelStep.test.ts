// ctx.modelStep and ctx.toolCall: one model step whose tool calls come back unrun, and a model-issued call run by
// name + JSON arguments + call id, with the offered-tools check. A loop built from them logs what chat logs.
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Either, Exit, Schema } from "effect"
import { Chat, EventStore, Kernel, Tool, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { kernelLayer, makeTools, tenant } from "./fixtures.js"

type Message = Chat.ChatMessage

const events = (runId: string) => Effect.flatMap(EventStore.EventStore, (s) => s.readEvents(tenant.tenantId, runId))

/** A tool the registry does not hold, passed by value. */
const makeLookup = (calls: Array<string>) =>
  Tool.make({
    name: "lookup",
    description: "Looks a word up",
    parameters: Schema.Struct({ word: Schema.String }),
    idempotent: true,
    handler: ({ word }, ctx) => Effect.sync(() => (calls.push(`${word}@${ctx.idempotencyKey}`), `definition of ${word}`))
  })

/** A hand-rolled loop: the context is rebuilt before every model step (here: only the last four messages are sent). */
const makeLoop = (lookup: Tool.Tool) =>
  Workflow.make({
    name: "loop",
    input: Schema.String,
    output: Schema.Struct({ answer: Schema.String, turns: Schema.Number }),
    run: (prompt, ctx) =>
      Effect.gen(function*() {
        const history: Array<Message> = [Chat.user(prompt)]
        for (let turn = 0; turn < 5; turn++) {
          const step = yield* ctx.modelStep({
            messages: [Chat.system("be brief"), ...history.slice(-4)],
            tools: [lookup, "get_balance"],
            key: `turn:${turn}`
          })
          history.push(step.message)
          if (step.answer !== undefined) return { answer: Either.getOrThrow(step.answer), turns: turn + 1 }
          for (const [i, call] of step.toolCalls.entries()) {
            const outcome = yield* ctx.toolCall(call, { tools: [lookup, "get_balance"], key: `turn:${turn}/tool:${i}` })
            history.push(outcome.message)
          }
        }
        return { answer: "gave up", turns: 5 }
      })
  })

describe("WorkflowContext.modelStep and toolCall", () => {
  it.effect("a loop of model steps and model-issued tool calls: tools by value, explicit keys, exact replay", () => {
    const calls: Array<string> = []
    const lookup = makeLookup(calls)
    const { all } = makeTools()
    const loop = makeLoop(lookup)
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const scripted = yield* ScriptedModel.ScriptedModel
      const result = yield* kernel.execute(loop, { runId: "loop-1", tenant, input: "define cat" })
      expect(result).toEqual({ status: "completed", runId: "loop-1", output: { answer: "a small feline", turns: 2 } })
      expect(calls).toEqual(["cat@loop-1/turn:0/tool:0"])
      // The tool passed by value was offered with the registered one; the tenant's capabilities still apply.
      expect(scripted.requests()[0]!.tools.map((t) => t.name)).toEqual(["lookup", "get_balance"])
      // The second request carries the tool message built from the call's outcome, under the call's id.
      expect(scripted.requests()[1]!.messages.at(-1)).toEqual({
        role: "tool",
        toolCallId: "call_1_0",
        name: "lookup",
        content: "definition of cat"
      })
      const logged = yield* events("loop-1")
      expect(logged.map((e) => `${e.type}@${e.stepKey}`)).toEqual([
        "RunStarted@run",
        "ModelRequested@turn:0", "ModelCompleted@turn:0",
        "ToolRequested@turn:0/tool:0", "ToolCompleted@turn:0/tool:0",
        "ModelRequested@turn:1", "ModelCompleted@turn:1",
        "RunCompleted@run"
      ])
      expect(logged[3]!.payload).toMatchObject({ tool: "lookup", arguments: '{"word":"cat"}', toolCallId: "call_1_0" })
      // Replay: nothing runs, nothing is asked, the same output.
      const replayed = yield* kernel.replay(loop, { tenantId: tenant.tenantId, runId: "loop-1" })
      expect(replayed).toEqual(result)
      expect(calls).toHaveLength(1)
      expect(scripted.calls()).toBe(2)
    }).pipe(Effect.provide(kernelLayer([
      ScriptedModel.toolCall("lookup", { word: "cat" }),
      ScriptedModel.text("a small feline")
    ], all)))
  })

  it.effect("a call to a tool not offered, a tool the tenant lacks, or bad arguments: logged, answered, never run", () => {
    const calls: Array<string> = []
    const lookup = makeLookup(calls)
    const { all, counter } = makeTools()
    const w = Workflow.make({
      name: "refusals",
      input: Schema.Null,
      output: Schema.Array(Schema.String),
      run: (_i, ctx) =>
        Effect.gen(function*() {
          const step = yield* ctx.modelStep({ messages: [Chat.user("go")], tools: ["get_balance", "transfer"] })
          const outcomes = yield* Effect.forEach(step.toolCalls, (call) => ctx.toolCall(call, { tools: ["get_balance", "transfer"] }))
          return outcomes.map((o) => (Either.isLeft(o.result) ? `${o.result.left._tag}: ${o.message.content}` : "ok"))
        })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const scripted = yield* ScriptedModel.ScriptedModel
      const result = yield* kernel.execute(w, { runId: "refusals", tenant, input: null })
      expect(result.status).toBe("completed")
      if (result.status !== "completed") return
      const [notOffered, denied, invalid] = result.output
      expect(notOffered).toMatch(/^UnknownTool: .*unknown tool \\"lookup\\"; registered tools: get_balance/)
      expect(denied).toMatch(/^PolicyDenied: .*lacks capability/)
      expect(invalid).toMatch(/^InvalidToolArguments: .*\$\.accountId/)
      // transfer needs finance:write, which the tenant lacks: it was not shown to the model either.
      expect(scripted.requests()[0]!.tools.map((t) => t.name)).toEqual(["get_balance"])
      expect(calls).toEqual([])
      expect(counter.count()).toBe(0)
      const failed = (yield* events("refusals")).flatMap((e) => (e.payload._tag === "ToolFailed" ? [e.payload.kind] : []))
      expect(failed).toEqual(["unknown_tool", "denied", "invalid_arguments"])
    }).pipe(Effect.provide(kernelLayer([
      {
        content: null,
        toolCalls: [
          { name: "lookup", arguments: { word: "x" } },
          { name: "transfer", arguments: { from: "a", to: "b", amount: 1 } },
          { name: "get_balance", arguments: { accountId: "x" } }
        ]
      }
      // lookup is registered, but this step did not offer it.
    ], [...all, lookup])))
  })

  it.effect("answer: decoded with the output schema, or the reason it does not decode", () => {
    const Decision = Schema.Struct({ approved: Schema.Boolean })
    const w = Workflow.make({
      name: "answers",
      input: Schema.Null,
      output: Schema.Array(Schema.String),
      run: (_i, ctx) =>
        Effect.gen(function*() {
          const good = yield* ctx.modelStep({ messages: [Chat.user("?")], tools: [], outputSchema: Decision })
          const bad = yield* ctx.modelStep({ messages: [Chat.user("?")], tools: [], outputSchema: Decision })
          return [good, bad].map((s) => Either.match(s.answer!, { onLeft: (why) => `left: ${why}`, onRight: (d) => `right: ${d.approved}` }))
        })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const scripted = yield* ScriptedModel.ScriptedModel
      const result = yield* kernel.execute(w, { runId: "answers", tenant, input: null })
      expect(result.status === "completed" && result.output).toEqual(["right: true", "left: the answer is not JSON: maybe"])
      expect(scripted.requests()[0]!.outputFormat?.schema).toMatchObject({ required: ["approved"] })
      expect(scripted.requests()[0]!.tools).toEqual([])
    }).pipe(Effect.provide(kernelLayer([ScriptedModel.json({ approved: true }), ScriptedModel.text("maybe")], [])))
  })

  it.effect("a sub-run started by a tool spends on the root's budget: the parent's next model step sees it", () => {
    const poor = { ...tenant, budgetUsdLimit: 0.05 }
    const child = Workflow.make({
      name: "child",
      input: Schema.Null,
      output: Schema.String,
      run: (_i, ctx) => Effect.map(ctx.modelStep({ messages: [Chat.user("spend")], tools: [] }), (s) => s.message.content ?? "")
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const scripted = yield* ScriptedModel.ScriptedModel
      const delegate = Tool.make({
        name: "delegate",
        description: "Runs a child run",
        parameters: Schema.Struct({}),
        handler: (_args, ctx) =>
          Effect.map(
            kernel.execute(child, { runId: `${ctx.runId}::child`, tenant: ctx.tenant, parentRunId: ctx.runId, input: null }),
            (r) => r.status
          )
      })
      const parent = Workflow.make({
        name: "parent",
        input: Schema.Null,
        output: Schema.String,
        run: (_i, ctx) =>
          Effect.gen(function*() {
            const step = yield* ctx.modelStep({ messages: [Chat.user("go")], tools: [delegate] })
            yield* ctx.toolCall(step.toolCalls[0]!, { tools: [delegate] })
            const next = yield* ctx.modelStep({ messages: [Chat.user("again")], tools: [] })
            return next.message.content ?? ""
          })
      })
      const result = yield* Effect.either(kernel.execute(parent, { runId: "root", tenant: poor, input: null }))
      expect(Either.isLeft(result) && result.left._tag).toBe("BudgetExceeded")
      // Parent 0.01 + child 0.04 = the whole budget: the parent's second call was refused before it was made.
      expect(scripted.calls()).toBe(2)
      const parentTypes = (yield* events("root")).map((e) => e.type)
      expect(parentTypes.slice(-2)).toEqual(["BudgetExceeded", "RunFailed"])
      const exceeded = (yield* events("root")).find((e) => e.payload._tag === "BudgetExceeded")!.payload
      expect(exceeded).toMatchObject({ phase: "before_call" })
      const runs = yield* Effect.flatMap(EventStore.EventStore, (s) => s.listRuns(tenant.tenantId, { rootRunId: "root" }))
      expect(runs.map((r) => [r.runId, r.status]).sort()).toEqual([["root", "failed"], ["root::child", "completed"]])
    }).pipe(Effect.provide(kernelLayer([
      ScriptedModel.toolCall("delegate", {}, { costUsd: 0.01 }),
      ScriptedModel.text("spent", { costUsd: 0.04 }),
      ScriptedModel.text("unreachable", { costUsd: 0.01 })
    ], [])))
  })

  it.effect("each step offers exactly the tools it names, whatever the step before offered", () => {
    const lookup = makeLookup([])
    const { all } = makeTools()
    // Offers that share tools with the one before: a prefix, an unknown name dropped, another order, a duplicate.
    const offers: ReadonlyArray<ReadonlyArray<string | Tool.Tool>> = [
      [lookup, "get_balance"],
      [lookup],
      [lookup, "nope"],
      ["get_balance", lookup],
      [lookup, "get_balance", "get_balance"],
      [lookup, "get_balance"]
    ]
    const w = Workflow.make({
      name: "offers",
      input: Schema.Null,
      output: Schema.Array(Schema.String),
      run: (_i, ctx) =>
        Effect.gen(function*() {
          for (const tools of offers) yield* ctx.modelStep({ messages: [Chat.user("go")], tools })
          // A call under the one-tool offer: get_balance, offered by the step before, is not offered now.
          const outcome = yield* ctx.toolCall({ id: "c1", name: "get_balance", arguments: JSON.stringify({ accountId: "acc-1" }) }, { tools: [lookup] })
          return Either.isLeft(outcome.result) ? [outcome.result.left._tag] : ["ok"]
        })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const scripted = yield* ScriptedModel.ScriptedModel
      const result = yield* kernel.execute(w, { runId: "offers", tenant, input: null })
      expect(result.status === "completed" ? result.output : result.status).toEqual(["UnknownTool"])
      expect(scripted.requests().map((r) => r.tools.map((t) => t.name))).toEqual([
        ["lookup", "get_balance"],
        ["lookup"],
        ["lookup"],
        ["get_balance", "lookup"],
        ["lookup", "get_balance"],
        ["lookup", "get_balance"]
      ])
    }).pipe(Effect.provide(kernelLayer(offers.map(() => ScriptedModel.text("ok")), all)))
  })

  it.effect("two different tools of one name offered to a step are refused, never one of them by chance", () => {
    const mine = makeLookup([])
    const theirs = makeLookup([])
    const w = Workflow.make({
      name: "twins",
      input: Schema.Null,
      output: Schema.String,
      run: (_i, ctx) => Effect.map(ctx.modelStep({ messages: [Chat.user("go")], tools: [mine, theirs] }), () => "sent")
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const scripted = yield* ScriptedModel.ScriptedModel
      const exit = yield* Effect.exit(kernel.execute(w, { runId: "twins", tenant, input: null }))
      const shown = Exit.isSuccess(exit) ? JSON.stringify(exit.value) : Cause.pretty(exit.cause)
      expect(shown).toContain(`two different tools offered to one step are named "lookup"`)
      expect(scripted.requests()).toEqual([])
    }).pipe(Effect.provide(kernelLayer([ScriptedModel.text("ok")], makeTools().all)))
  })
})
