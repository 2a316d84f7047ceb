// ChatLoop: the loop ctx.chat runs, used by a workflow that builds each turn's prompt itself. It runs the tool calls
// a step asks for, asks again for an answer that does not decode, and gives up as a result (not a failure), so the
// caller decides what giving up does.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Chat, ChatLoop, EventStore, Kernel, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { kernelLayer, makeTools, tenant } from "./fixtures.js"

const Answer = Schema.Struct({ total: Schema.Number })

/** A loop whose prompt is rebuilt every turn (a system line naming the turn), giving up with a value. */
const loop = Workflow.make({
  name: "own-loop",
  input: Schema.String,
  output: Schema.Struct({ outcome: Schema.String, turns: Schema.Number, inputTokens: Schema.Number }),
  run: (prompt, ctx) =>
    Effect.gen(function*() {
      const history: Array<Chat.ChatMessage> = [Chat.user(prompt)]
      const end = yield* ChatLoop.run({
        maxTurns: 4,
        maxDecodeRetries: 1,
        push: (message) => void history.push(message),
        modelStep: (turn) =>
          ctx.modelStep({ messages: [Chat.system(`turn ${turn}`), ...history], tools: ["get_balance"], outputSchema: Answer, key: `turn:${turn}` }),
        toolCalls: (step, turn) =>
          Effect.forEach(step.toolCalls, (call, i) =>
            Effect.map(ctx.toolCall(call, { tools: ["get_balance"], key: `turn:${turn}/tool:${i}` }), (o) => void history.push(o.message)), { discard: true })
      })
      const outcome = end._tag === "Answered" ? `total ${end.output.total}` : `gave up: ${end.error._tag}`
      return { outcome, turns: end.turns, inputTokens: end.tally.usage.inputTokens }
    })
})

const events = (runId: string) => Effect.flatMap(EventStore.EventStore, (s) => s.readEvents(tenant.tenantId, runId))

describe("ChatLoop", () => {
  it.effect("tool calls run and their results reach the next turn; an answer that does not decode is asked for again", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const scripted = yield* ScriptedModel.ScriptedModel
      const result = yield* kernel.execute(loop, { runId: "own-1", tenant, input: "what is the total?" })
      expect(result).toMatchObject({ status: "completed", output: { outcome: "total 42", turns: 3 } })
      const requests = scripted.requests()
      expect(requests[1]!.messages.at(-1)).toMatchObject({ role: "tool", name: "get_balance" })
      expect(requests[2]!.messages[0]).toEqual(Chat.system("turn 2"))
      expect(requests[2]!.messages.at(-1)).toEqual(Chat.user("Your answer did not match the required JSON schema: the answer is not JSON: about forty. Answer again with JSON only."))
      expect((yield* events("own-1")).map((e) => `${e.type}@${e.stepKey}`)).toEqual([
        "RunStarted@run",
        "ModelRequested@turn:0", "ModelCompleted@turn:0",
        "ToolRequested@turn:0/tool:0", "ToolCompleted@turn:0/tool:0",
        "ModelRequested@turn:1", "ModelCompleted@turn:1",
        "ModelRequested@turn:2", "ModelCompleted@turn:2",
        "RunCompleted@run"
      ])
      expect(yield* kernel.replay(loop, { tenantId: tenant.tenantId, runId: "own-1" })).toEqual(result)
    }).pipe(Effect.provide(kernelLayer([
      ScriptedModel.toolCall("get_balance", { accountId: "acc-1" }),
      ScriptedModel.text("about forty"),
      ScriptedModel.json({ total: 42 })
    ], makeTools().all))))

  it.effect("past its decode retries the loop gives up with OutputDecodeError as a result: the workflow completes", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* kernel.execute(loop, { runId: "own-2", tenant, input: "what is the total?" })
      expect(result).toMatchObject({ status: "completed", output: { outcome: "gave up: OutputDecodeError", turns: 2 } })
    }).pipe(Effect.provide(kernelLayer([ScriptedModel.text("no"), ScriptedModel.text("still no")], makeTools().all))))

  it.effect("firstTurn: a loop that goes on from earlier turns numbers its turns (and keys) from there, and maxTurns counts them all", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const continued = Workflow.make({
        name: "own-loop-continued",
        input: Schema.Number,
        output: Schema.Struct({ outcome: Schema.String, turns: Schema.Number }),
        run: (firstTurn, ctx) =>
          Effect.gen(function*() {
            const history: Array<Chat.ChatMessage> = [Chat.user("what is the total?")]
            const end = yield* ChatLoop.run({
              firstTurn,
              maxTurns: 3,
              maxDecodeRetries: 5,
              push: (message) => void history.push(message),
              modelStep: (turn) => ctx.modelStep({ messages: [...history], outputSchema: Answer, key: `turn:${turn}` }),
              toolCalls: () => Effect.void
            })
            return { outcome: end._tag === "Answered" ? "answered" : `${end.error._tag} ${end.error._tag === "MaxTurnsExceeded" ? end.error.maxTurns : ""}`, turns: end.turns }
          })
      })
      const result = yield* kernel.execute(continued, { runId: "own-3", tenant, input: 1 })
      expect(result).toMatchObject({ status: "completed", output: { outcome: "MaxTurnsExceeded 3", turns: 3 } })
      expect((yield* events("own-3")).map((e) => `${e.type}@${e.stepKey}`)).toEqual([
        "RunStarted@run", "ModelRequested@turn:1", "ModelCompleted@turn:1", "ModelRequested@turn:2", "ModelCompleted@turn:2", "RunCompleted@run"
      ])
      const past = yield* kernel.execute(continued, { runId: "own-4", tenant, input: 5 })
      expect(past).toMatchObject({ status: "completed", output: { outcome: "MaxTurnsExceeded 3", turns: 5 } })
    }).pipe(Effect.provide(kernelLayer([ScriptedModel.text("no"), ScriptedModel.text("still no")], makeTools().all))))
})
