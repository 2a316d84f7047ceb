// `tsx src/live-approval.ts`: an agent's answer streams to the terminal as the model produces it, and inside that
// streamed turn the model calls `transfer_funds`, a tool that needs a person's yes: the stream shows the pending
// approval, the terminal asks for it, and the same stream carries on with the decision, the tool's result and the
// model's next turn, to the end of the run.
// Offline on the scripted model (its replies stream in simulated deltas, as the screen says); on OpenAI (SSE) when
// OPENAI_API_KEY (or OPENAI_BASE_URL) is set.
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline/promises"
import { fileURLToPath } from "node:url"
import { Config, Effect, Layer, Schema } from "effect"
import { Artana, Chat, type Kernel, Live, ModelPort, Tenant, Tool, type Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { OpenAiModel } from "@artana/model-openai"
import { SqliteStore } from "@artana/store-sqlite"
import { showRunCommand } from "./quickstart.js"
import { runMain } from "./runMain.js"

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: ["finance:write"], budgetUsdLimit: 0.05 })

/** Moves money: every call waits for a person's yes (`needsApproval`) before it runs. */
export const transferFunds = Tool.make({
  name: "transfer_funds",
  description: "Moves money between two accounts",
  parameters: Schema.Struct({ from: Schema.String, to: Schema.String, amountUsd: Schema.Number }),
  success: Schema.Struct({ ok: Schema.Boolean, reference: Schema.String }),
  requiresCapability: "finance:write",
  needsApproval: true,
  handler: async ({ amountUsd, from, to }) => ({ ok: true, reference: `tx-${from}-${to}-${amountUsd}` })
})

/** An agent turn loop (`ctx.chat` with tools): it runs until the model answers without calling a tool. */
export const payAgent: Workflow.Workflow<string, string, unknown> = Artana.workflow({
  name: "pay-agent",
  input: Schema.String,
  output: Schema.String,
  run: async (request, ctx) => {
    const reply = await ctx.chat({
      messages: [Chat.system("You move money with transfer_funds when asked. Say what you do, then do it."), Chat.user(request)],
      tools: [transferFunds]
    })
    return reply.output
  }
})

const request = "Please move $250 from acc-1 to acc-2."
const intro = "Sure: I will move $250 from acc-1 to acc-2 with transfer_funds. That needs your approval."
const done = "Done: $250 went from acc-1 to acc-2 (reference tx-acc-1-acc-2-250)."

const refusal = "the person at the terminal said no"
const declined = "Understood: I did not move the money, since the transfer was not approved."

/**
 * The offline model: its first turn streams its text and then the call; its second turn streams the answer to the
 * decision (the scripted reply for a transfer that ran, or for one the person rejected).
 */
const scripted = (paceMs: number): Layer.Layer<ModelPort.ModelPort> =>
  Layer.sync(ModelPort.ModelPort, () => {
    const pace = { beforeDelta: () => Effect.sleep(paceMs) }
    const options = { model: "gpt-4o-mini" }
    const approved = ScriptedModel.make([
      ScriptedModel.toolCall("transfer_funds", { from: "acc-1", to: "acc-2", amountUsd: 250 }, { content: intro, deltas: 12, ...pace }),
      ScriptedModel.text(done, { deltas: 10, ...pace })
    ], options).port
    const rejected = ScriptedModel.make([ScriptedModel.text(declined, { deltas: 8, ...pace })], options).port
    const pick = (request: ModelPort.ModelRequest) => {
      const last = request.messages[request.messages.length - 1]
      return last?.role === "tool" && (last.content ?? "").includes(refusal) ? rejected : approved
    }
    // Every call of the port picks its script: `streamTo` (the kernel's push path for streamed calls) included.
    return {
      ...approved,
      generate: (request) => pick(request).generate(request),
      stream: (request) => pick(request).stream(request),
      streamTo: (request, sink) => pick(request).streamTo(request, sink)
    }
  })

export interface Options {
  /** Where text goes (the terminal by default). */
  readonly write?: ((text: string) => void) | undefined
  /** The person's answer: yes to approve (asked on the terminal by default). */
  readonly ask?: ((question: string) => Promise<boolean>) | undefined
  readonly filename?: string | undefined
  /** Milliseconds between the scripted model's deltas (default 40: slow enough to watch). */
  readonly paceMs?: number | undefined
}

const askOnTerminal = async (question: string): Promise<boolean> => {
  const rl = createInterface({ input: process.stdin, output: process.stdout })
  try {
    return /^y/i.test(await rl.question(question))
  } finally {
    rl.close()
  }
}

/** How the run went: as it first paused (or ended), its end, and every live event the watcher saw. */
export interface Outcome {
  readonly first: Kernel.RunResult<string>
  readonly final: Kernel.RunResult<string>
  readonly events: ReadonlyArray<Live.LiveEvent>
}

export const main = async (options: Options = {}): Promise<Outcome> => {
  const write = options.write ?? ((text: string) => void process.stdout.write(text))
  const online = (process.env.OPENAI_API_KEY ?? "") !== "" || (process.env.OPENAI_BASE_URL ?? "") !== ""
  const model = online ? OpenAiModel.layerConfig({ stream: Config.succeed(true) }) : scripted(options.paceMs ?? 40)
  const filename = options.filename ?? join(mkdtempSync(join(tmpdir(), "artana-live-approval-")), "artana.db")
  const artana = Artana.create({ store: SqliteStore.layer({ filename }), model, tools: [transferFunds], workflows: [payAgent] })
  try {
    const run = { tenantId: tenant.tenantId, runId: `pay-${Date.now()}` }
    write(`model: ${online ? "OpenAI (SSE)" : "ScriptedModel (offline: simulated deltas; set OPENAI_API_KEY to use OpenAI)"}\n`)
    write(`you: ${request}\n\nagent: `)
    const started = artana.run(payAgent, { runId: run.runId, tenant, input: request })
    const replies = Live.replies()
    const events: Array<Live.LiveEvent> = []
    let decided: Promise<Kernel.RunResult<string>> | undefined
    let turns = 0
    // One stream from the start to the end of the run: the approval is asked inside it, and it carries on after.
    for await (const e of artana.live(run, { waitForStart: true })) {
      events.push(e)
      replies.push(e)
      if (e._tag === "ModelStreamStarted" && turns > 0) write("agent: ")
      if (e._tag === "TextDelta") write(e.text)
      if (e._tag === "ModelCompleted") {
        turns++
        // A reader that missed deltas (it came late) gets the logged reply: the truth the deltas previewed.
        if (replies.text(e.stepKey) !== (e.message.content ?? "")) write(` [logged reply: ${e.message.content}]`)
      }
      if (e._tag === "ApprovalPending") {
        write(`\n\n[pending approval ${e.approvalId}${e.approvers === undefined ? "" : ` for ${e.approvers.join(" or ")}`}]\n`)
        const yes = await (options.ask ?? askOnTerminal)(`approve ${e.tool} ${e.arguments}? [y/N] `)
        decided = yes
          ? artana.approve({ tenantId: run.tenantId, approvalId: e.approvalId, approver: "you@terminal", workflow: payAgent })
          : artana.reject({ tenantId: run.tenantId, approvalId: e.approvalId, approver: "you@terminal", reason: refusal, workflow: payAgent })
      }
      if (e._tag === "ApprovalDecided") write(`[${e.decision} by ${e.by ?? "?"}]\n`)
      if (e._tag === "ToolCompleted") write(`[${e.tool} ran: ${JSON.stringify(e.result)}]\n`)
      if (e._tag === "ToolFailed") write(`[${e.tool} did not run: ${e.error}]\n`)
      if (e._tag === "Completed") write(`\n\nrun completed: ${JSON.stringify(e.output)}\n`)
      if (e._tag === "Failed") write(`\n\nrun failed: ${e.error}\n`)
    }
    const first = await started
    const final = decided === undefined ? first : await decided
    // The file is kept (as the quick start's is) so the run can be inspected: its chain, the approval and who gave it.
    write(`inspect it: ${showRunCommand(run.runId, filename, tenant.tenantId)}\n`)
    return { first, final, events }
  } finally {
    await artana.close()
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) void runMain(main)
