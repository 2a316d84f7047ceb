// `pnpm bench skills`: prompt tokens an agent with fifty realistic tools (bench/skills-catalog.ts: descriptions
// with usage notes, return values and errors, described parameters, enums and nested objects, as real tool servers
// write them) sends over a scripted 20-turn support session (a double charge investigated across three months,
// refunded, answered), with every tool's full schema in every request, against progressive skills (names and
// one-line summaries in the prompt, `load_skill` for the rest).
//
// full_vs_progressive_tokens: the session's prompt tokens with full schemas / with progressive skills. Both run the
//   same 20 work turns (19 tool calls to 9 of the 50 tools, and the answer) with the same results; the progressive
//   agent also spends a first turn loading the first phase's skills, and loads each next phase's skills in parallel
//   with the last call of a phase; that turn's prompt, and the load calls and answers in the history, count too. Tokens are counted with gpt-tokenizer (o200k_base, gpt-4o-mini): each request's
//   messages plus its tools' JSON specs. Deterministic: one run of each, in the same process. Target >= 5.
// full_vs_progressive_tool_tokens: the part of those prompts the tools take (specs offered, and the skills list),
//   full / progressive: the history and instructions both sessions share are left out.
// full_vs_progressive_tokens_unbounded: the same session with `progressiveSkills: { maxLoaded: Infinity }`: every
//   skill loaded stays loaded, where the default keeps an adaptive working set (Skills.WORKING_SET to start with, one
//   more each time the model loads again a skill it had unloaded).
import { Effect, Layer } from "effect"
import { Chat, EventStore, Kernel, Middleware, ModelPort, Tenant, ToolRegistry } from "@artana/core"
import { AutonomousAgent, ContextBuilder, MemoryStore, Skills } from "@artana/agent"
import { makeModel, type Answer } from "./agent-model.js"
import { type BenchResult, progress } from "./lib.js"
import { catalog } from "./skills-catalog.js"

const tenant = Tenant.TenantContext.make({ tenantId: "bench", capabilities: [], budgetUsdLimit: 100 })

const INSTRUCTIONS = `You are Acme Support's customer-operations agent. You resolve billing and account issues end to end:
investigate with the CRM, billing and support tools, follow the refund policy, act, tell the customer, and leave
the records tidy. Refunds above your approval limit need a manager's approval. Be precise with amounts and ids.`

const TASK = "Ticket T-4410: Acme Corp says they were charged twice for October. Investigate, fix it if it is our error, reply to the customer, and book a follow-up call with their billing contact."

type Call = { readonly name: string; readonly arguments: unknown }
const call = (name: string, args: unknown): Call => ({ name, arguments: args })

/**
 * The work, in phases; each phase's tools are loaded together before it (progressive skills). Nineteen calls to
 * nine of the fifty tools, as a support session goes: most calls reuse a tool already in hand.
 */
const PHASES: ReadonlyArray<ReadonlyArray<Call>> = [
  [
    call("support_get_ticket", { ticket_id: "T-4410" }),
    call("crm_get_account", { account_id: "ACME-1042", include: "contacts" })
  ],
  [
    call("billing_list_invoices", { account_id: "ACME-1042", from: "2024-10-01", to: "2024-10-31" }),
    call("billing_get_charge", { charge_id: "CH-5530" }),
    call("billing_get_charge", { charge_id: "CH-5531" }),
    call("billing_list_invoices", { account_id: "ACME-1042", from: "2024-09-01", to: "2024-09-30" }),
    call("billing_get_charge", { charge_id: "CH-5402" }),
    call("billing_list_invoices", { account_id: "ACME-1042", from: "2024-08-01", to: "2024-08-31" }),
    call("billing_get_charge", { charge_id: "CH-5277" })
  ],
  [
    call("hr_get_policy_limit", { role: "agent", action: "refund" }),
    call("billing_refund_charge", { charge_id: "CH-5531", reason: "duplicate", note: "Duplicate of CH-5530 (T-4410)" }),
    call("support_get_ticket", { ticket_id: "T-4388" }),
    call("support_update_ticket", { ticket_id: "T-4388", status: "closed", internal_note: "Duplicate of T-4410." }),
    call("billing_get_charge", { charge_id: "CH-5531" })
  ],
  [
    call("crm_log_activity", { account_id: "ACME-1042", kind: "note", summary: "Duplicate October charge CH-5531 refunded (RF-220), T-4410." }),
    call("support_reply_ticket", { ticket_id: "T-4410", body: "We refunded the duplicate charge CH-5531 (EUR 49.00, RF-220); it reaches your card within 5 to 10 business days." }),
    call("support_update_ticket", { ticket_id: "T-4410", status: "pending" }),
    call("billing_list_invoices", { account_id: "ACME-1042", status: "draft" }),
    call("support_update_ticket", { ticket_id: "T-4410", tags: ["billing", "duplicate-charge", "refunded"] })
  ]
]
const ANSWER: Answer = { content: "Refunded the duplicate October charge CH-5531 (EUR 49.00, RF-220); August and September were billed once. Replied on T-4410 and closed its duplicate T-4388." }

const work: ReadonlyArray<Answer> = [...PHASES.flat().map((c) => ({ toolCalls: [c] })), ANSWER]

const loads = (phase: ReadonlyArray<Call>): ReadonlyArray<Call> => [...new Set(phase.map((c) => c.name))].map((name) => call("load_skill", { name }))

/**
 * The same work with progressive skills: the first turn loads the first phase's skills; the last call of each phase
 * goes with the loads of the next phase's skills, in parallel (as a model that plans ahead does), so they are
 * callable when that phase starts.
 */
const progressiveScript: ReadonlyArray<Answer> = [
  { toolCalls: loads(PHASES[0]!) },
  ...PHASES.flatMap((phase, p) =>
    phase.map((c, i) => ({ toolCalls: i === phase.length - 1 && p + 1 < PHASES.length ? [c, ...loads(PHASES[p + 1]!)] : [c] }))
  ),
  ANSWER
]

const session = async (progressive: boolean, maxLoaded?: number) => {
  const script = progressive ? progressiveScript : work
  const model = await makeModel((_request, n) => {
    const answer = script[n]
    if (answer === undefined) throw new Error(`the script has ${script.length} replies; request ${n + 1} arrived`)
    return answer
  })
  const agent = AutonomousAgent.make({ name: "support", instructions: INSTRUCTIONS, tools: catalog, progressiveSkills: progressive && maxLoaded !== undefined ? { maxLoaded } : progressive, memory: false, maxTurns: 40 })
  const layer = Layer.provideMerge(
    Kernel.layer(),
    Layer.mergeAll(EventStore.layerMemory, Layer.succeed(ModelPort.ModelPort, model.port), ToolRegistry.layer([]), Middleware.layerEmpty, MemoryStore.layerMemory)
  )
  const result = await Effect.runPromise(agent.run({ runId: `skills-${progressive}`, tenant, prompt: TASK }).pipe(Effect.provide(layer)))
  if (result.status !== "completed") throw new Error(`the session did not complete: ${result.status}`)
  const tokens = await Promise.all(model.requests.map(model.promptTokens))
  // What the tools take of each prompt: their specs, and the skills list (the system prompt's last part).
  const count = (text: string) => Effect.runPromise(model.port.countTokens([Chat.system(text)], "gpt-4o-mini"))
  const toolTokens = await Promise.all(model.requests.map(async (r) => {
    const system = r.messages[0]?.content ?? ""
    const skills = system.includes(ContextBuilder.SKILLS_HEADING) ? system.slice(system.indexOf(ContextBuilder.SKILLS_HEADING)) : ""
    return (await count(JSON.stringify(r.tools))) + (skills === "" ? 0 : await count(skills))
  }))
  // Every call in the script was made and succeeded (a refused call would show as an error in the next prompt).
  const failures = model.requests.flatMap((r) => r.messages.filter((m) => m.role === "tool" && m.content.startsWith('{"error"')))
  if (failures.length > 0) throw new Error(`a tool call failed: ${failures[0]!.content}`)
  const allSpecs = await Effect.runPromise(model.port.countTokens([Chat.system(JSON.stringify(catalog.map((t) => t.spec)))], "gpt-4o-mini"))
  return {
    allSpecs,
    turns: model.requests.length,
    total: tokens.reduce((a, b) => a + b, 0),
    toolTotal: toolTokens.reduce((a, b) => a + b, 0),
    first: tokens[0]!,
    toolsOffered: model.requests.map((r) => r.tools.length)
  }
}

export default async (machine: BenchResult["machine"]): Promise<BenchResult> => {
  progress(`full schemas: ${catalog.length} tools, ${work.length} turns`)
  const full = await session(false)
  progress(`progressive skills: ${progressiveScript.length} turns (1 loading turn)`)
  const progressive = await session(true)
  progress(`progressive skills, none unloaded: ${progressiveScript.length} turns`)
  const unbounded = await session(true, Infinity)
  const ratio = full.total / progressive.total
  return {
    name: "skills",
    machine,
    rows: [{
      metric: "full_vs_progressive_tokens",
      value: ratio,
      unit: "ratio",
      baseline: `progressive skills, same session (${progressive.turns} turns, one of them only loading skills)`,
      baselineValue: progressive.total,
      ratio,
      detail: {
        full_total_tokens: full.total,
        progressive_total_tokens: progressive.total,
        full_turns: full.turns,
        progressive_turns: progressive.turns,
        full_first_prompt_tokens: full.first,
        progressive_first_prompt_tokens: progressive.first,
        full_tokens_per_turn: Math.round(full.total / full.turns),
        progressive_tokens_per_turn: Math.round(progressive.total / progressive.turns),
        tools: catalog.length,
        tool_spec_tokens_mean: Math.round(full.allSpecs / catalog.length),
        skills_loaded: new Set(PHASES.flat().map((c) => c.name)).size,
        most_tools_offered_progressive: Math.max(...progressive.toolsOffered),
        working_set_start: Skills.WORKING_SET,
        target: ">= 5"
      }
    }, {
      metric: "full_vs_progressive_tool_tokens",
      value: full.toolTotal / progressive.toolTotal,
      unit: "ratio",
      baseline: "progressive skills, same session: tool specs offered + the skills list, summed over the turns",
      baselineValue: progressive.toolTotal,
      ratio: full.toolTotal / progressive.toolTotal,
      detail: { full_tool_tokens: full.toolTotal, progressive_tool_tokens: progressive.toolTotal }
    }, {
      metric: "full_vs_progressive_tokens_unbounded",
      value: full.total / unbounded.total,
      unit: "ratio",
      baseline: "progressive skills with progressiveSkills: { maxLoaded: Infinity } (no skill unloaded), same session",
      baselineValue: unbounded.total,
      ratio: full.total / unbounded.total,
      detail: { progressive_total_tokens: unbounded.total, most_tools_offered: Math.max(...unbounded.toolsOffered) }
    }]
  }
}
