// The agents, tools and model of the crash tests, shared by the child program (which imports @artana/core's build)
// and the tests (which import its sources through vitest's aliases): both sides run the same code, or a resumed run
// would diverge from its log for reasons the tests do not intend.
//
// The model answers from what the request shows (never from a call counter), so a resumed process, which asks only
// for the steps its log does not hold, gets the same answers the first process would have.
import { appendFileSync, existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Layer, Schema } from "effect"
import { type Chat, Kernel, Middleware, ModelPort, Pricing, Tenant, Tool, ToolRegistry } from "@artana/core"
import { SqliteStore } from "@artana/store-sqlite"
import { AutonomousAgent, CompactionStrategy, type MemoryStore, SqlMemoryStore, SubAgent } from "../../src/index.js"

export const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 5 })

export type Scenario = "compaction" | "subagent" | "doubt"

export const parseScenario = (text: string | undefined): Scenario => {
  if (text !== "compaction" && text !== "subagent" && text !== "doubt") throw new Error(`bad scenario ${text}; expected compaction, subagent or doubt`)
  return text
}

/**
 * Where the crash happens: the `n`th request of `kind` this process sends (1-based); for `send`, right after the
 * `n`th side effect of the non-idempotent `send` tool, before its outcome is logged.
 */
export interface CrashPoint {
  readonly kind: "summary" | "child" | "send"
  readonly n: number
}

export const parseCrashPoint = (text: string | undefined): CrashPoint | undefined => {
  if (text === undefined) return undefined
  const [kind, n] = text.split(":")
  if ((kind !== "summary" && kind !== "child" && kind !== "send") || n === undefined) {
    throw new Error(`bad crash point ${text}; expected summary:N, child:N or send:N`)
  }
  return { kind, n: Number(n) }
}

export const effectsFile = (dir: string) => join(dir, "effects.log")

/** Every line of the side-effect log. */
export const effects = (dir: string): ReadonlyArray<string> =>
  existsSync(effectsFile(dir)) ? readFileSync(effectsFile(dir), "utf8").split("\n").filter((l) => l !== "") : []

const observation = /^observation (\d+)/
const numbers = (text: string) => [...text.matchAll(/observation (\d+)/g)].map((m) => Number(m[1]))

/** The highest observation number a request shows (in tool results, or in a summary), or -1. */
const lastObservation = (messages: ReadonlyArray<Chat.ChatMessage>): number =>
  Math.max(-1, ...messages.flatMap((m) => (m.role === "tool" && observation.test(m.content) ? numbers(m.content) : m.role === "system" ? numbers(m.content) : [])))

const isSummary = (request: ModelPort.ModelRequest) => request.model === "cheap"
const isChild = (request: ModelPort.ModelRequest) => (request.messages[0]?.content ?? "").includes("You research")

/**
 * The "doubt" scenario's three agents, each answering from what its request shows: the director delegates to the
 * manager, which assigns to the clerk, which sends once; each then answers with what its tool returned, prefixed.
 */
const doubtTools = [
  { tool: "delegate", args: { task: "Have the notice sent." }, prefix: "director" },
  { tool: "assign", args: { task: "Send the notice to the board." }, prefix: "manager" },
  { tool: "send", args: { to: "board" }, prefix: "clerk" }
] as const

/** The model: summaries name the last observation they fold in; agents observe until 8 (child: 2), then answer. */
const makeModel = (crash: CrashPoint | undefined) => {
  const seen = { summary: 0, child: 0 }
  return ModelPort.make({
    defaultModel: "scripted",
    // Test models cost nothing, said in code: the kernel refuses a model it cannot price.
    prices: { scripted: Pricing.free, cheap: Pricing.free },
    generate: (request) =>
      Effect.sync(() => {
        const kind = isSummary(request) ? "summary" : isChild(request) ? "child" : "parent"
        if (kind !== "parent") seen[kind]++
        if (crash !== undefined && kind === crash.kind && seen[kind] === crash.n) process.kill(process.pid, "SIGKILL")
        const last = lastObservation(request.messages)
        const reply = (message: Chat.AssistantMessage) => ({ model: request.model, message, usage: { inputTokens: 10, outputTokens: 5 }, costUsd: 0.0001 })
        const call = (name: string, args: unknown) =>
          reply({ role: "assistant", content: null, toolCalls: [{ id: `call_${name}_${last + 1}`, name, arguments: JSON.stringify(args) }] })
        const doubt = doubtTools.find((d) => request.tools.some((t) => t.name === d.tool))
        if (doubt !== undefined) {
          const answered = request.messages.find((m) => m.role === "tool" && m.name === doubt.tool)
          return answered === undefined ? call(doubt.tool, doubt.args) : reply({ role: "assistant", content: `${doubt.prefix}: ${answered.content}` })
        }
        if (kind === "summary") {
          const transcript = request.messages[1]?.content ?? ""
          return reply({ role: "assistant", content: `Read observations up to observation ${Math.max(-1, ...numbers(transcript))}.` })
        }
        if (kind === "child") {
          const childLast = Math.max(99, last)
          return childLast < 102 ? call("observe", { n: childLast + 1 }) : reply({ role: "assistant", content: `child saw up to ${childLast}` })
        }
        if (request.tools.some((t) => t.name === "research")) {
          const done = request.messages.some((m) => m.role === "tool" && m.name === "research")
          return done ? reply({ role: "assistant", content: "report written" }) : call("research", { task: "Observe 100 to 102." })
        }
        return last < 8 ? call("observe", { n: last + 1 }) : reply({ role: "assistant", content: `done at ${last}` })
      })
  })
}

type Services = Kernel.Kernel | ModelPort.ModelPort | ToolRegistry.ToolRegistry | Middleware.Middleware | MemoryStore.MemoryStore | SqliteStore.Services
type Outcome = Effect.Effect<Kernel.RunResult<AutonomousAgent.AgentOutput<string>>, AutonomousAgent.RunError | Kernel.KernelError, AutonomousAgent.Requirements>

export interface Fixture {
  /** The services of one process on `db`. */
  readonly layer: (db: string) => Layer.Layer<Services>
  readonly run: (scenario: Scenario, runId: string) => Outcome
  readonly replay: (scenario: Scenario, runId: string) => Outcome
}

/** The scenario's agents, and the layer of one process: SQLite file, memory on the same connection, the model. */
export const makeScenario = (options: { readonly dir: string; readonly crash?: CrashPoint | undefined }): Fixture => {
  const observe = Tool.make({
    name: "observe",
    description: "Reads an observation and records it.",
    parameters: Schema.Struct({ n: Schema.Int }),
    idempotent: true,
    handler: ({ n }, ctx) =>
      Effect.sync(() => {
        appendFileSync(effectsFile(options.dir), `observe ${n} ${ctx.idempotencyKey}\n`)
        return `observation ${n}`
      })
  })
  const watcher = AutonomousAgent.make({
    name: "watcher",
    instructions: "You watch observations.",
    tools: [observe],
    compaction: CompactionStrategy.make({ triggerAtMessages: 6, keepRecentMessages: 2, summarizeWithModel: "cheap" })
  })
  const researcher = AutonomousAgent.make({ name: "researcher", instructions: "You research observations.", tools: [observe] })
  const lead = AutonomousAgent.make({
    name: "lead",
    instructions: "You lead; delegate observing.",
    tools: [SubAgent.asTool({ name: "research", description: "Observes and reports.", agent: researcher })]
  })
  // Three levels: director -> manager -> clerk, whose `send` is not idempotent (a notice sent twice is two notices).
  let sent = 0
  const send = Tool.make({
    name: "send",
    description: "Sends the notice.",
    parameters: Schema.Struct({ to: Schema.String }),
    handler: ({ to }, ctx) =>
      Effect.sync(() => {
        appendFileSync(effectsFile(options.dir), `send ${to} ${ctx.idempotencyKey}\n`)
        sent++
        if (options.crash?.kind === "send" && sent === options.crash.n) process.kill(process.pid, "SIGKILL")
        return `delivered to ${to}`
      })
  })
  const clerk = AutonomousAgent.make({ name: "clerk", instructions: "You send notices.", tools: [send] })
  const manager = AutonomousAgent.make({
    name: "manager",
    instructions: "You manage; assign the sending.",
    tools: [SubAgent.asTool({ name: "assign", description: "Has a clerk send it.", agent: clerk })]
  })
  const director = AutonomousAgent.make({
    name: "director",
    instructions: "You direct; delegate the notice.",
    tools: [SubAgent.asTool({ name: "delegate", description: "Has a manager see to it.", agent: manager })]
  })
  const agentOf = (scenario: Scenario) => (scenario === "compaction" ? watcher : scenario === "subagent" ? lead : director)
  const layer = (db: string) =>
    Layer.provideMerge(
      Kernel.layer(),
      Layer.mergeAll(Layer.succeed(ModelPort.ModelPort, makeModel(options.crash)), ToolRegistry.layer([]), Middleware.layerEmpty)
    ).pipe(Layer.provideMerge(SqlMemoryStore.layer()), Layer.provideMerge(SqliteStore.layer({ filename: db })), Layer.orDie)
  const run = (scenario: Scenario, runId: string) => agentOf(scenario).run({ runId, tenant, prompt: "Work until done." })
  const replay = (scenario: Scenario, runId: string) => agentOf(scenario).replay({ tenantId: tenant.tenantId, runId })
  return { layer, run, replay }
}
