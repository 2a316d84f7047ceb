// Long-term memory through the agent: the core_memory_* tools write and search the MemoryStore, scoped by tenant and
// agent; the [CORE MEMORY] section is at the top of the system prompt every turn, read in a memoized step that logs
// the text only when it changed; memory outlives the run.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { Tenant } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { AutonomousAgent, MemoryStore } from "@artana/agent"
import { agentLayer, eventsOf, scripted, systemOf, tenant } from "./fixtures.js"

const other = Tenant.TenantContext.make({ tenantId: "globex", capabilities: [], budgetUsdLimit: 10 })

describe("memory", () => {
  it.effect("append, search, replace through the tools; the section shows memory at the top of every prompt", () => {
    const analyst = AutonomousAgent.make({ name: "analyst", instructions: "You analyse sales." })
    return Effect.gen(function*() {
      const result = yield* analyst.run({ runId: "m-1", tenant, prompt: "Remember our fiscal year." })
      expect(result).toMatchObject({ status: "completed", output: { output: "noted" } })
      const model = yield* ScriptedModel.ScriptedModel
      const prompts = model.requests().map(systemOf)
      expect(prompts[0]).toMatch(/^\[CORE MEMORY\] \(0\/4000 characters[^\n]*\n\(empty\)\n\nYou analyse sales\.$/)
      expect(prompts[1]).toMatch(/^\[CORE MEMORY\] \(41\/4000 characters[^\n]*\n- Our fiscal year starts in April, not May\.\n\nYou analyse sales\./)
      expect(prompts[3]).toContain("- Our fiscal year starts in June, not May.")
      // The search's results were answered to the model.
      const searchAnswer = model.requests()[2]!.messages.at(-1)
      expect(searchAnswer).toMatchObject({ role: "tool", name: "core_memory_search" })
      expect(JSON.parse(searchAnswer!.content ?? "")).toMatchObject({ results: [{ content: "Our fiscal year starts in April, not May." }] })
      const memory = yield* MemoryStore.MemoryStore
      expect((yield* memory.list({ tenantId: "acme", agentId: "analyst" })).map((e) => e.content)).toEqual(["Our fiscal year starts in June, not May."])
      // The section's step logs its text when it changed and null when it did not (after the search).
      const logged = (yield* eventsOf("m-1")).flatMap((e) => (e.payload._tag === "StepCompleted" ? [e.payload.value] : []))
      expect(logged.map((v) => (typeof v === "string" ? "text" : v))).toEqual(["text", "text", null, "text"])
      // Memory outlives the run: a new run starts with it; another tenant's agent of the same name does not see it.
      yield* analyst.run({ runId: "m-2", tenant, prompt: "What do you remember?" })
      expect(systemOf(model.requests()[4]!)).toContain("- Our fiscal year starts in June, not May.")
      yield* analyst.run({ runId: "m-3", tenant: other, prompt: "What do you remember?" })
      expect(systemOf(model.requests()[5]!)).toContain("(empty)")
      // The replay renders the logged memory, not the store's current one.
      yield* memory.append({ tenantId: "acme", agentId: "analyst" }, "Added later.")
      const replayed = yield* analyst.replay({ tenantId: "acme", runId: "m-1" })
      expect(replayed).toEqual(result)
    }).pipe(Effect.provide(agentLayer(scripted([
      ScriptedModel.toolCall("core_memory_append", { content: "Our fiscal year starts in April, not May." }),
      ScriptedModel.toolCall("core_memory_search", { query: "fiscal april" }),
      ScriptedModel.toolCall("core_memory_replace", { old_content: "April", new_content: "June" }),
      ScriptedModel.text("noted"),
      ScriptedModel.text("June"),
      ScriptedModel.text("nothing")
    ]))))
  })

  it.effect("a full memory refuses an append and tells the model to condense; a bad replace is answered too", () => {
    const analyst = AutonomousAgent.make({ name: "analyst", instructions: "x", memory: { limitChars: 40, agentId: "shared" } })
    return Effect.gen(function*() {
      yield* analyst.run({ runId: "full", tenant, prompt: "save" })
      const model = yield* ScriptedModel.ScriptedModel
      const answers = model.requests().slice(1).map((r) => JSON.parse(r.messages.at(-1)!.content ?? "null"))
      expect(answers[0]).toMatchObject({ usedChars: 27, limitChars: 40 })
      expect(answers[1]).toEqual({ error: "ToolError", message: expect.stringContaining("holds 27 of 40 characters and cannot take 28 more") })
      expect(answers[2]).toEqual({ error: "ToolError", message: expect.stringContaining("no memory of agent \"shared\" contains \"Tokyo\"") })
      // The memory id names the scope.
      const memory = yield* MemoryStore.MemoryStore
      expect(yield* memory.list({ tenantId: "acme", agentId: "shared" })).toHaveLength(1)
    }).pipe(Effect.provide(agentLayer(scripted([
      ScriptedModel.toolCall("core_memory_append", { content: "The HQ is in Paris, France." }),
      ScriptedModel.toolCall("core_memory_append", { content: "The CFO is Dana, since 2021." }),
      ScriptedModel.toolCall("core_memory_replace", { old_content: "Tokyo", new_content: "Osaka" }),
      ScriptedModel.text("done")
    ]))))
  })

  it.effect("memory: false offers no memory tools and no section", () => {
    const analyst = AutonomousAgent.make({ name: "analyst", instructions: "plain", memory: false })
    return Effect.gen(function*() {
      const result = yield* Effect.either(analyst.run({ runId: "off", tenant, prompt: "x" }))
      expect(Either.isRight(result)).toBe(true)
      const model = yield* ScriptedModel.ScriptedModel
      expect(model.requests()[0]!.tools).toEqual([])
      expect(systemOf(model.requests()[0]!)).toBe("plain")
    }).pipe(Effect.provide(agentLayer(scripted([ScriptedModel.text("ok")]))))
  })
})
