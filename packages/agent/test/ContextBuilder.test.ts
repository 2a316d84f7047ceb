// The ContextBuilder: sections anyone implements (composed, or added by an extension), a subclass that changes the
// layout, memoized sections that a replay renders from the log.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ScriptedModel } from "@artana/core/testing"
import { AutonomousAgent, ContextBuilder } from "@artana/agent"
import { agentLayer, scripted, stepsOf, systemOf, tenant } from "./fixtures.js"

/** A retrieval section whose index changes between calls: what was loaded must come back from the log on replay. */
const makeRag = () => {
  let version = 0
  const loads: Array<string> = []
  const section = ContextBuilder.memoized({
    name: "docs",
    load: ({ task, turn }) =>
      Effect.sync(() => {
        loads.push(`turn ${turn}`)
        // The index changes after the first load: turn 1 sees version 1, later turns the same.
        const v = Math.min(version++, 1)
        return `[RELEVANT DOCS]\n- ${task} (index v${v})`
      })
  })
  return { section, loads }
}

describe("ContextBuilder", () => {
  it.effect("sections in order: top ones before the identity, then the others; memoized ones log only changes; replay is exact", () => {
    const rag = makeRag()
    const rules = ContextBuilder.text("rules", "[HOUSE RULES]\n- Cite sources.")
    const banner = ContextBuilder.text("banner", "[TENANT acme]", "top")
    const analyst = AutonomousAgent.make({
      name: "analyst",
      instructions: "You analyse sales.",
      context: new ContextBuilder.ContextBuilder({ sections: [rules] }),
      sections: [rag.section, banner],
      memory: false
    })
    return Effect.gen(function*() {
      const result = yield* analyst.run({ runId: "ctx", tenant, prompt: "churn in EMEA" })
      const requests = (yield* ScriptedModel.ScriptedModel).requests()
      expect(systemOf(requests[0]!)).toBe(
        "[TENANT acme]\n\nYou analyse sales.\n\n[HOUSE RULES]\n- Cite sources.\n\n[RELEVANT DOCS]\n- churn in EMEA (index v0)"
      )
      expect(systemOf(requests[2]!)).toContain("(index v1)")
      expect(rag.loads).toEqual(["turn 0", "turn 1", "turn 2"])
      expect(yield* stepsOf("ctx")).toEqual([
        "RunStarted@run",
        "StepCompleted@turn:0/section:docs", "ModelRequested@turn:0", "ModelCompleted@turn:0", "ToolRequested@turn:0/tool:0", "ToolFailed@turn:0/tool:0",
        "StepCompleted@turn:1/section:docs", "ModelRequested@turn:1", "ModelCompleted@turn:1", "ToolRequested@turn:1/tool:0", "ToolFailed@turn:1/tool:0",
        "StepCompleted@turn:2/section:docs", "ModelRequested@turn:2", "ModelCompleted@turn:2",
        "RunCompleted@run"
      ])
      // The replay loads nothing: the text comes from the log (the index moved on since).
      expect(yield* analyst.replay({ tenantId: tenant.tenantId, runId: "ctx" })).toEqual(result)
      expect(rag.loads).toHaveLength(3)
    }).pipe(Effect.provide(agentLayer(scripted([
      ScriptedModel.toolCall("nothing_here", {}),
      ScriptedModel.toolCall("nothing_here", {}),
      ScriptedModel.text("done")
    ]))))
  })

  it.effect("a subclass changes the layout; withSections keeps the subclass", () => {
    class Terse extends ContextBuilder.ContextBuilder {
      override systemPrompt(parts: ContextBuilder.PromptParts): string {
        return `${parts.identity} | ${parts.sections.map((s) => s.name).join(",")}`
      }
    }
    const builder = new Terse().withSections(ContextBuilder.text("a", "A"), ContextBuilder.text("b", "B"))
    expect(builder).toBeInstanceOf(Terse)
    expect(builder.sections.map((s) => s.name)).toEqual(["a", "b"])
    expect(() => builder.withSections(ContextBuilder.text("a", "again"))).toThrow(/two context sections are named "a"/)
    const analyst = AutonomousAgent.make({ name: "terse", instructions: "Be brief.", context: builder, memory: false })
    return Effect.gen(function*() {
      yield* analyst.run({ runId: "terse", tenant, prompt: "hi" })
      expect(systemOf((yield* ScriptedModel.ScriptedModel).requests()[0]!)).toBe("Be brief. | a,b")
    }).pipe(Effect.provide(agentLayer(scripted([ScriptedModel.text("ok")]))))
  })

  it.effect("a section loaded once per run is one step; an extension's section joins the builder's", () => {
    let loads = 0
    const once = ContextBuilder.memoized({ name: "profile", refresh: "once", load: () => Effect.sync(() => `[PROFILE]\nloaded ${++loads}`) })
    const analyst = AutonomousAgent.make({ name: "analyst", instructions: "x", memory: false, extensions: [{ name: "profile", sections: [once] }] })
    return Effect.gen(function*() {
      yield* analyst.run({ runId: "once", tenant, prompt: "hi" })
      const requests = (yield* ScriptedModel.ScriptedModel).requests()
      expect(requests.map(systemOf)).toEqual(["x\n\n[PROFILE]\nloaded 1", "x\n\n[PROFILE]\nloaded 1"])
      expect((yield* stepsOf("once")).filter((s) => s.startsWith("StepCompleted"))).toEqual(["StepCompleted@section:profile"])
    }).pipe(Effect.provide(agentLayer(scripted([ScriptedModel.toolCall("nothing_here", {}), ScriptedModel.text("ok")]))))
  })
})
