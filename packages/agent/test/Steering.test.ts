// Steering: a signal named AutonomousAgent.STEERING_SIGNAL sent to an agent's run becomes a user message in its next
// turn, taken by a logged step, so a replay injects it at the same turn.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Chat, Kernel, Tool } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { AutonomousAgent } from "@artana/agent"
import { agentLayer, eventsOf, scripted, stepsOf, tenant } from "./fixtures.js"

describe("AutonomousAgent steering", () => {
  it.effect("a steering message sent while a turn runs is a user message in the next turn, logged, and replayed", () => {
    // Sends the steering message from inside turn 0 (as a person watching the run would): set once the kernel is built.
    let send: ((runId: string) => Effect.Effect<void>) | undefined
    const lookAround = Tool.make({
      name: "look_around",
      description: "Looks around.",
      parameters: Schema.Struct({}),
      idempotent: true,
      handler: (_args, ctx) => Effect.as(send === undefined ? Effect.dieMessage("no kernel") : send(ctx.runId), "nothing new")
    })
    const analyst = AutonomousAgent.make({ name: "analyst", instructions: "You analyse sales.", tools: [lookAround], memory: false, steering: true })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      send = (runId) =>
        Effect.orDie(kernel.signal({ tenantId: tenant.tenantId, runId, name: AutonomousAgent.STEERING_SIGNAL, payload: { text: "Only EMEA, please." } }))
      const result = yield* analyst.run({ runId: "steer", tenant, prompt: "How did Q3 go?" })
      expect(result).toMatchObject({ status: "completed", output: { output: "EMEA did well.", turns: 2 } })
      expect(yield* stepsOf("steer")).toEqual([
        "RunStarted@run",
        "SignalTimedOut@turn:0/steer:0",
        "ModelRequested@turn:0", "ModelCompleted@turn:0",
        "ToolRequested@turn:0/tool:0", "SignalSent@run", "ToolCompleted@turn:0/tool:0",
        "SignalReceived@turn:1/steer:0", "SignalTimedOut@turn:1/steer:1",
        "ModelRequested@turn:1", "ModelCompleted@turn:1",
        "RunCompleted@run"
      ])
      // The model saw the message in its second turn, after the tool's answer.
      const model = yield* ScriptedModel.ScriptedModel
      const second = model.requests()[1]!
      expect(second.messages.slice(-3).map((m) => m.role)).toEqual(["assistant", "tool", "user"])
      expect(second.messages.at(-1)).toEqual(Chat.user("Only EMEA, please."))
      const requested = (yield* eventsOf("steer")).find((e) => e.stepKey === "turn:1" && e.payload._tag === "ModelRequested")!
      expect(requested.payload._tag === "ModelRequested" && requested.payload.messages.at(-1)).toEqual(Chat.user("Only EMEA, please."))
      // A replay takes the same message at the same turn, and calls nothing.
      send = undefined
      expect(yield* analyst.replay({ tenantId: tenant.tenantId, runId: "steer" })).toEqual(result)
      expect(model.calls()).toBe(2)
    }).pipe(Effect.provide(agentLayer(scripted([
      ScriptedModel.toolCall("look_around", {}),
      ScriptedModel.text("EMEA did well.")
    ]), { tools: [lookAround] })))
  })
})
