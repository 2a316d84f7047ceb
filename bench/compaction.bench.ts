// `pnpm bench compaction`: a 1,000-turn scripted agent run (a research agent reading ~1,500-character pages, a
// fact saved to memory on turn 5) under a token-ratio compaction strategy, counted with gpt-tokenizer.
//
// max_prompt_vs_bound: the largest prompt of the 1,000 turns (messages + tool specs, o200k_base tokens) / the
//   strategy's bound (triggerAtTokenRatio x contextWindow). Target <= 1.
// compaction_tokens_per_turn: what compaction costs per turn of the run, in tokens: the summary steps' prompts and
//   answers / 1,000 turns; baseline: the loop's own prompt tokens per turn, so the ratio is compaction's share on
//   top of the run.
// uncompacted_prompt_vs_bound: what the last turn's prompt would take with nothing compacted (the task and every
//   message of the run) / the bound: how far past its context window the run would have gone.
// The run is deterministic (a scripted model, in-memory log): one run, in the process; the summary model's
// answers are ~1,200 characters.
import { Effect, Layer, Schema } from "effect"
import { Chat, EventStore, Kernel, Middleware, ModelPort, Tenant, Tool, ToolRegistry } from "@artana/core"
import { AutonomousAgent, CompactionStrategy, MemoryStore } from "@artana/agent"
import { makeModel } from "./agent-model.js"
import { type BenchResult, progress } from "./lib.js"

const TURNS = 1_000
const FACT = "The client's fiscal year starts on April 1."
const tenant = Tenant.TenantContext.make({ tenantId: "bench", capabilities: [], budgetUsdLimit: 1_000 })

const WORDS = "market revenue growth region customer churn pricing quarter forecast segment margin retention pipeline cohort".split(" ")
/** A page of 1,500 characters, different for each n. */
const pageText = (n: number) => {
  const sentences: Array<string> = [`Page ${n} of the report.`]
  for (let i = 0; sentences.join(" ").length < 1500; i++) {
    sentences.push(`The ${WORDS[(n + i) % WORDS.length]} of ${WORDS[(n * 7 + i * 3) % WORDS.length]} moved ${(n * 31 + i * 17) % 100}% in segment ${(n + i) % 9}.`)
  }
  return sentences.join(" ").slice(0, 1500)
}

const readPage = Tool.make({
  name: "read_page",
  description: "Reads one page of the market report.",
  parameters: Schema.Struct({ page: Schema.Int }),
  idempotent: true,
  handler: ({ page }) => Effect.succeed(pageText(page))
})

export default async (machine: BenchResult["machine"]): Promise<BenchResult> => {
  let turn = 0
  const summaryText = `Summary: the agent is reading the market report page by page; ${"key figures are recorded, no anomalies so far; ".repeat(24)}`
  const isSummary = (r: ModelPort.ModelRequest) => r.tools.length === 0 && r.model === "gpt-4o-mini-summary"
  const model = await makeModel((request) => {
    if (isSummary(request)) return { content: summaryText }
    const t = turn++
    if (t === 5) return { toolCalls: [{ name: "core_memory_append", arguments: { content: FACT } }] }
    if (t === TURNS - 1) return { content: /fiscal year starts on April 1/.test(request.messages[0]?.content ?? "") ? "April 1" : "forgotten" }
    return { toolCalls: [{ name: "read_page", arguments: { page: t } }] }
  })
  const strategy = CompactionStrategy.make({ triggerAtTokenRatio: 0.5, contextWindow: 16_000, keepRecentMessages: 12, summarizeWithModel: "gpt-4o-mini-summary" })
  const agent = AutonomousAgent.make({
    name: "researcher",
    instructions: "You read the market report page by page and keep what matters in memory.",
    tools: [readPage],
    compaction: strategy,
    maxTurns: TURNS
  })
  const layer = Layer.provideMerge(
    Kernel.layer(),
    Layer.mergeAll(EventStore.layerMemory, Layer.succeed(ModelPort.ModelPort, model.port), ToolRegistry.layer([]), Middleware.layerEmpty, MemoryStore.layerMemory)
  )
  progress(`${TURNS} turns, bound ${strategy.boundTokens} tokens`)
  const started = Date.now()
  const result = await Effect.runPromise(agent.run({ runId: "compaction", tenant, prompt: "Read the whole market report; at the end, say when the client's fiscal year starts." }).pipe(Effect.provide(layer)))
  const seconds = (Date.now() - started) / 1000
  if (result.status !== "completed") throw new Error(`the run did not complete: ${result.status}`)
  if (result.output.output !== "April 1") throw new Error(`the fact saved on turn 5 was lost: ${result.output.output}`)

  progress("counting prompts")
  const loop = model.requests.filter((r) => !isSummary(r))
  const summaries = model.requests.filter(isSummary)
  const loopTokens = await Promise.all(loop.map(model.promptTokens))
  const summaryPromptTokens = await Promise.all(summaries.map(model.promptTokens))
  const summaryAnswerTokens = summaries.length * await Effect.runPromise(model.port.countTokens([Chat.assistant(summaryText)], "gpt-4o-mini"))
  const bound = strategy.boundTokens!
  const max = Math.max(...loopTokens)
  const perTurn = loopTokens.reduce((a, b) => a + b, 0) / TURNS
  const compactionPerTurn = (summaryPromptTokens.reduce((a, b) => a + b, 0) + summaryAnswerTokens) / TURNS
  // The whole conversation as it would stand at the last turn without compaction.
  const everything: Array<Chat.ChatMessage> = [...loop.at(-1)!.messages.slice(0, 2)]
  for (const r of loop) {
    const last = r.messages.at(-1)
    if (last !== undefined && last.role === "tool") everything.push(Chat.assistant(null, [{ id: last.toolCallId, name: last.name, arguments: "{}" }]), last)
  }
  const uncompacted = await Effect.runPromise(model.port.countTokens([...everything, Chat.system(JSON.stringify(loop.at(-1)!.tools))], "gpt-4o-mini"))
  return {
    name: "compaction",
    machine,
    rows: [
      {
        metric: "max_prompt_vs_bound",
        value: max / bound,
        unit: "ratio",
        baseline: `compaction bound: triggerAtTokenRatio 0.5 x contextWindow 16,000`,
        baselineValue: bound,
        ratio: max / bound,
        detail: { max_prompt_tokens: max, mean_prompt_tokens: Math.round(perTurn), turns: TURNS, compactions: result.output.compactions, fact_from_turn_5_recalled_at_turn_1000: "yes", run_seconds: seconds, target: "<= 1" }
      },
      {
        metric: "compaction_tokens_per_turn",
        value: compactionPerTurn,
        unit: "tokens",
        baseline: "the loop's own prompt tokens per turn",
        baselineValue: perTurn,
        ratio: compactionPerTurn / perTurn,
        detail: { summaries: summaries.length, turns_per_compaction: TURNS / summaries.length, summary_prompt_tokens_mean: Math.round(summaryPromptTokens.reduce((a, b) => a + b, 0) / summaries.length) }
      },
      {
        metric: "uncompacted_prompt_vs_bound",
        value: uncompacted / bound,
        unit: "ratio",
        baseline: "compaction bound",
        baselineValue: bound,
        ratio: uncompacted / bound,
        detail: { uncompacted_last_prompt_tokens: uncompacted }
      }
    ]
  }
}
