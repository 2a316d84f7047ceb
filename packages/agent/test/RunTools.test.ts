// Tools of one run (`Extension.runTools`): listed once at the start of a run in a logged step, offered with the agent's
// own, called like any tool; a replay takes the list from the log.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import { Tool } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { AgentErrors, AutonomousAgent, type Extension } from "@artana/agent"
import { agentLayer, scripted, stepsOf, tenant } from "./fixtures.js"

/** A "server" whose tool list changes between listings: only the logged listing may count. */
const catalogue = () => {
  let listings = 0
  const calls: Array<string> = []
  const toolOf = (name: string) =>
    Tool.make({
      name,
      description: `Looks ${name} up`,
      parameters: Schema.Struct({ id: Schema.String }),
      idempotent: true,
      handler: ({ id }) => Effect.sync(() => (calls.push(`${name}:${id}`), { id, found: true }))
    })
  const extension: Extension.Extension = {
    name: "remote",
    runTools: ({ ctx, key }) =>
      Effect.map(
        ctx.step("remote.list", Effect.sync(() => (listings++, listings === 1 ? ["lookup"] : ["lookup", "delete_everything"])), Schema.Array(Schema.String), { key: key("list") }),
        (names) => names.map(toolOf)
      )
  }
  return { extension, calls, listings: () => listings }
}

describe("Extension.runTools", () => {
  it.effect("the run's tools are listed once in a logged step, offered, called; a replay lists nothing and matches", () => {
    const remote = catalogue()
    const agent = AutonomousAgent.make({ name: "clerk", instructions: "Look things up.", memory: false, extensions: [remote.extension] })
    return Effect.gen(function*() {
      const result = yield* agent.run({ runId: "rt-1", tenant, prompt: "Find c-7" })
      expect(result).toMatchObject({ status: "completed", output: { output: "found" } })
      expect(remote.calls).toEqual(["lookup:c-7"])
      expect((yield* stepsOf("rt-1")).slice(0, 4)).toEqual(["RunStarted@run", "StepCompleted@tools:remote:list", "ModelRequested@turn:0", "ModelCompleted@turn:0"])
      const model = yield* ScriptedModel.ScriptedModel
      expect(model.requests()[0]!.tools.map((t) => t.name)).toEqual(["lookup"])
      // The "server" now lists another tool; the replay takes the logged list and calls nothing.
      expect(yield* agent.replay({ tenantId: tenant.tenantId, runId: "rt-1" })).toEqual(result)
      expect(remote.listings()).toBe(1)
      expect(remote.calls).toHaveLength(1)
    }).pipe(Effect.provide(agentLayer(scripted([ScriptedModel.toolCall("lookup", { id: "c-7" }), ScriptedModel.text("found")]))))
  })

  it.effect("a run tool named like one of the agent's, or a hook that fails, fails the run with an ExtensionError", () => {
    const clash: Extension.Extension = { name: "clash", runTools: () => Effect.succeed([Tool.make({ name: "core_memory_append", description: "x", parameters: Schema.Struct({}), handler: () => Effect.succeed(null) })]) }
    const broken: Extension.Extension = { name: "broken", runTools: () => Effect.fail(new Error("server unreachable")) }
    return Effect.gen(function*() {
      const first = yield* Effect.either(AutonomousAgent.make({ name: "a", instructions: "x", extensions: [clash] }).run({ runId: "rt-2", tenant, prompt: "go" }))
      expect(Either.isLeft(first) && first.left).toBeInstanceOf(AgentErrors.ExtensionError)
      expect(Either.isLeft(first) && first.left.message).toContain(`run tool "core_memory_append" is named like another tool`)
      const second = yield* Effect.either(AutonomousAgent.make({ name: "b", instructions: "x", memory: false, extensions: [broken] }).run({ runId: "rt-3", tenant, prompt: "go" }))
      expect(Either.isLeft(second) && second.left.message).toBe(`agent extension "broken" failed: its run tools could not be had: server unreachable`)
    }).pipe(Effect.provide(agentLayer(scripted([]))))
  })
})
