// An agent with tools, memory and progressive skills through the real `openai` SDK, over HTTP, against the local
// OpenAI-compatible server (FakeOpenAi): what the SDK sends is what the agent built, and the answer decodes.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { OpenAiModel } from "@artana/model-openai"
import { FakeOpenAi } from "@artana/model-openai/testing"
import { AutonomousAgent, MemoryStore } from "@artana/agent"
import { agentLayer, makeTools, stepsOf, tenant } from "./fixtures.js"

const Report = Schema.Struct({ region: Schema.String, revenue: Schema.Number })

type Body = { readonly messages: ReadonlyArray<{ readonly role: string; readonly content?: string | null; readonly tool_call_id?: string }>; readonly tools?: ReadonlyArray<{ readonly function: { readonly name: string } }>; readonly response_format?: unknown; readonly model: string }

const bodyOf = (server: FakeOpenAi.Server, i: number): Body => server.requests[i]!.body as Body

describe("an agent over the openai SDK", () => {
  it.scopedLive("memory, a skill loaded on demand, a tool call and a structured answer, all through HTTP", () =>
    Effect.gen(function*() {
      const { effects, querySales } = makeTools()
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.toolCall("core_memory_append", { content: "Report revenue in EUR." }, { id: "call_a" }),
        FakeOpenAi.toolCall("load_skill", { name: "query_sales" }, { id: "call_b" }),
        FakeOpenAi.toolCall("query_sales", { region: "EMEA", quarter: "2024-Q3" }, { id: "call_c" }),
        FakeOpenAi.json({ region: "EMEA", revenue: 1_200_000 })
      ])
      const analyst = AutonomousAgent.make({ name: "analyst", instructions: "You analyse sales.", tools: [querySales], progressiveSkills: true })
      const { memory, result, steps } = yield* Effect.gen(function*() {
        const result = yield* analyst.run({ runId: "oa-1", tenant, prompt: "EMEA in Q3?", model: "gpt-4o-mini", outputSchema: Report })
        const memory = yield* Effect.flatMap(MemoryStore.MemoryStore, (m) => m.list({ tenantId: tenant.tenantId, agentId: "analyst" }))
        return { result, memory, steps: yield* stepsOf("oa-1") }
      }).pipe(Effect.provide(agentLayer(OpenAiModel.layer({ baseURL: server.url, retryBaseDelay: "1 millis" }))))
      expect(result).toMatchObject({ status: "completed", output: { output: { region: "EMEA", revenue: 1_200_000 }, turns: 4 } })
      expect(effects.lines).toEqual(["query_sales oa-1/turn:2/tool:0 EMEA/2024-Q3"])
      expect(server.requests).toHaveLength(4)
      const bodies = [0, 1, 2, 3].map((i) => bodyOf(server, i))
      expect(bodies.every((b) => b.model === "gpt-4o-mini")).toBe(true)
      const toolNames = bodies.map((b) => (b.tools ?? []).map((t) => t.function.name))
      expect(toolNames[0]).toEqual(["core_memory_append", "core_memory_replace", "core_memory_search", "load_skill"])
      expect(toolNames[2]).toContain("query_sales")
      // The memory written on the first turn is at the top of the next system prompt the server receives.
      expect(bodies[1]!.messages[0]!.content).toMatch(/^\[CORE MEMORY\][^\n]*\n- Report revenue in EUR\./)
      // Tool results travel as tool messages answering the calls' ids.
      expect(bodies[3]!.messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id)).toEqual(["call_a", "call_b", "call_c"])
      expect(JSON.stringify(bodies[0]!.response_format)).toContain("json_schema")
      expect(memory.map((e) => e.content)).toEqual(["Report revenue in EUR."])
      expect(steps.filter((s) => s.startsWith("ModelCompleted"))).toEqual(["ModelCompleted@turn:0", "ModelCompleted@turn:1", "ModelCompleted@turn:2", "ModelCompleted@turn:3"])
    }))
})
