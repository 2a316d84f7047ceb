// A 1,000-turn run on a scripted model: the prompt never passes the compaction bound, a fact written to memory on
// turn 5 is in the prompt on every turn after (to turn 999, through dozens of compactions, long after the turn that
// wrote it was folded away), and the replay of the whole run reproduces every compaction exactly.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Chat, Kernel, ModelPort, Tool } from "@artana/core"
import { AutonomousAgent, CompactionStrategy, MemoryStore } from "@artana/agent"
import { agentLayer, isSummaryRequest, makeResponder, systemOf, tenant } from "./fixtures.js"

const TURNS = 1_000
const FACT = "The vault code is 7-4-1."

describe("a long run", () => {
  it.effect(`${TURNS} turns: the context stays bounded, memory survives compactions, replay is exact`, () => {
    let observations = 0
    const observe = Tool.make({
      name: "observe",
      description: "Reads the next sensor observation.",
      parameters: Schema.Struct({ n: Schema.Int }),
      idempotent: true,
      handler: ({ n }) => Effect.sync(() => (observations++, `observation ${n}: ${"reading ".repeat(60)}`))
    })
    let loopTurn = 0
    const model = makeResponder((request) => {
      if (isSummaryRequest(request)) return { content: `Summary: the agent has been reading sensor observations; ${"all nominal. ".repeat(30)}` }
      const turn = loopTurn++
      if (turn === 5) return { toolCalls: [{ name: "core_memory_append", arguments: { content: FACT } }] }
      if (turn === TURNS - 1) {
        const code = /vault code is ([\d-]+)/.exec(systemOf(request))?.[1] ?? "forgotten"
        return { content: JSON.stringify({ code }) }
      }
      return { toolCalls: [{ name: "observe", arguments: { n: turn } }] }
    })
    const strategy = CompactionStrategy.make({ triggerAtTokenRatio: 0.5, contextWindow: 8_000, summarizeWithModel: "cheap", keepRecentMessages: 10 })
    const archivist = AutonomousAgent.make({
      name: "archivist",
      instructions: "You watch the sensors and remember what matters.",
      tools: [observe],
      compaction: strategy,
      maxTurns: TURNS
    })
    const Answer = Schema.Struct({ code: Schema.String })
    return Effect.gen(function*() {
      const result = yield* archivist.run({ runId: "long", tenant, prompt: "Watch the sensors; at the end, tell me the vault code.", outputSchema: Answer })
      expect(result.status).toBe("completed")
      if (result.status !== "completed") return
      expect(result.output.output).toEqual({ code: "7-4-1" })
      expect(result.output.turns).toBe(TURNS)

      const loop = model.requests.filter((r) => !isSummaryRequest(r))
      const summaries = model.requests.filter(isSummaryRequest)
      expect(loop).toHaveLength(TURNS)
      expect(result.output.compactions).toBe(summaries.length)
      expect(summaries.length).toBeGreaterThan(40)

      // The bound: every prompt (messages and tool specs, as the agent counts them) is within it.
      const tokens = loop.map((r) => ModelPort.approximateTokens([...r.messages, Chat.system(JSON.stringify(r.tools))]))
      expect(Math.max(...tokens)).toBeLessThanOrEqual(strategy.boundTokens!)
      expect(Math.max(...tokens)).toBeGreaterThan(strategy.boundTokens! * 0.8)

      // The fact is in the system prompt of every turn after it was written, and only there: the turn that wrote it
      // was compacted away hundreds of turns ago.
      const withFact = loop.map((r) => systemOf(r).includes(`- ${FACT}`))
      expect(withFact.slice(0, 6).every((x) => !x)).toBe(true)
      expect(withFact.slice(6).every((x) => x)).toBe(true)
      for (const turn of [500, 750, TURNS - 1]) {
        expect(loop[turn]!.messages.slice(1).some((m) => (m.content ?? "").includes("7-4-1"))).toBe(false)
      }
      const memory = yield* MemoryStore.MemoryStore
      expect((yield* memory.list({ tenantId: tenant.tenantId, agentId: "archivist" })).map((e) => e.content)).toEqual([FACT])

      // The replay walks the same 1,000 turns and every compaction from the log: nothing runs, nothing is asked.
      const asked = model.requests.length
      const ran = observations
      expect(yield* archivist.replay({ tenantId: tenant.tenantId, runId: "long", outputSchema: Answer })).toEqual(result)
      expect(model.requests.length).toBe(asked)
      expect(observations).toBe(ran)
      const kernel = yield* Kernel.Kernel
      expect((yield* kernel.verify({ tenantId: tenant.tenantId, runId: "long" })).ok).toBe(true)
    }).pipe(Effect.provide(agentLayer(model.layer)))
  }, 120_000)
})
