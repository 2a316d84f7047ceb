// One process's part of the agent's capped-heap test (LongRunHeap.test.ts):
// `node [--max-old-space-size=N] --import tsx child.ts write|resume|replay|rerun DB TURNS`. `write` runs the agent
// live and dies (SIGKILL) when its model is asked for the last turn, leaving the run in flight; `resume` runs it again
// under the same id (the kernel recovers it: it replays every turn from the log and answers the last live); `replay`
// replays the completed run; `rerun` runs it once more (a completed run answers from its end). Prints one JSON line:
// {"outcome":"result","result":...,"peakRssMb":...} or {"outcome":"error",...}.
//
// The model answers from what the request shows (never from a call counter), so every process gets the answers the
// first one got. Each request carries a context of up to about 64 KB (the compaction bound), so the log of a long
// run is large: reading it whole takes far more than the capped heap.
import { Cause, Effect, Exit, Layer, Schema } from "effect"
import { type Chat, Kernel, Middleware, ModelPort, Pricing, Tenant, Tool, ToolRegistry } from "@artana/core"
import { SqliteStore } from "@artana/store-sqlite"
import { AutonomousAgent, CompactionStrategy, SqlMemoryStore } from "../../src/index.js"

const [command, db, turnsText] = process.argv.slice(2)
if (db === undefined || turnsText === undefined) throw new Error("usage: child.ts write|resume|replay|rerun DB TURNS")
const turns = Number(turnsText)
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 5 })
const runId = "long-agent"

/** An observation's text: about 2 KB, numbered. */
const observationOf = (n: number) => `observation ${n}: ${"sensor nominal; ".repeat(128)}`
const numbers = (text: string) => [...text.matchAll(/observation (\d+)/g)].map((m) => Number(m[1]))
/** The highest observation number a request shows (in tool results or a summary), or -1. */
const lastObservation = (messages: ReadonlyArray<Chat.ChatMessage>): number =>
  Math.max(-1, ...messages.flatMap((m) => (m.role === "tool" || m.role === "system" ? numbers(m.content) : [])))

const model = ModelPort.make({
  defaultModel: "scripted",
  prices: { scripted: Pricing.free, cheap: Pricing.free },
  generate: (request) =>
    Effect.sync(() => {
      const reply = (message: Chat.AssistantMessage) => ({ model: request.model, message, usage: { inputTokens: 10, outputTokens: 5 }, costUsd: 0 })
      if (request.model === "cheap") {
        return reply({ role: "assistant", content: `Read observations up to observation ${Math.max(-1, ...numbers(request.messages[1]?.content ?? ""))}.` })
      }
      const next = lastObservation(request.messages) + 1
      if (next < turns - 1) {
        return reply({ role: "assistant", content: null, toolCalls: [{ id: `call_${next}`, name: "observe", arguments: JSON.stringify({ n: next }) }] })
      }
      // The last turn: the first process dies here, before the model's answer is logged.
      if (command === "write") process.kill(process.pid, "SIGKILL")
      return reply({ role: "assistant", content: `done after ${next} observations` })
    })
})

const observe = Tool.make({
  name: "observe",
  description: "Reads an observation.",
  parameters: Schema.Struct({ n: Schema.Int }),
  idempotent: true,
  handler: ({ n }) => Effect.succeed(observationOf(n))
})

const watcher = AutonomousAgent.make({
  name: "watcher",
  instructions: "You watch observations until told to stop.",
  tools: [observe],
  maxTurns: turns + 1,
  compaction: CompactionStrategy.make({ triggerAtTokenRatio: 0.5, contextWindow: 32_000, summarizeWithModel: "cheap", keepRecentMessages: 10 }),
  // One run however long (a chain of runs would bound each log by itself): what is read is this run's log.
  continueAsNewAfterEvents: false
})

const layer = Layer.provideMerge(
  Kernel.layer(),
  Layer.mergeAll(Layer.succeed(ModelPort.ModelPort, model), ToolRegistry.layer([]), Middleware.layerEmpty)
).pipe(Layer.provideMerge(SqlMemoryStore.layer()), Layer.provideMerge(SqliteStore.layer({ filename: db })), Layer.orDie)

const program = command === "replay"
  ? watcher.replay({ tenantId: tenant.tenantId, runId })
  : watcher.run({ runId, tenant, prompt: "Observe until told to stop." })

const exit = await Effect.runPromiseExit(Effect.provide(program, layer))
const peakRssMb = process.resourceUsage().maxRSS / 1024
const summary = Exit.map(exit, (r) => (r.status === "completed" ? { status: r.status, runId: r.runId, output: r.output.output, turns: r.output.turns } : { status: r.status, runId: r.runId }))
console.log(JSON.stringify(Exit.match(summary, {
  onSuccess: (result) => ({ outcome: "result", result, peakRssMb }),
  onFailure: (cause) => ({ outcome: "error", error: Cause.pretty(cause), peakRssMb })
})))
process.exitCode = Exit.isSuccess(exit) ? 0 : 3
