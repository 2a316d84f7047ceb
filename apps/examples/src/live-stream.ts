// `tsx src/live-stream.ts`: watch a run as it happens. The model's answer streams to the terminal through the
// kernel (durable, priced against the budget, personal data scrubbed from every delta); the watcher disconnects
// half-way and reconnects at the last offset it saw, and gets exactly the rest; the run then waits for a person's
// yes on the terminal, and the same stream carries on to the end.
// Offline on the scripted model (its reply streams in pieces); on OpenAI (SSE) when OPENAI_API_KEY is set.
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline/promises"
import { fileURLToPath } from "node:url"
import { Config, Effect, Schema } from "effect"
import { Artana, Chat, type Kernel, Live, Tenant, type Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { Pii } from "@artana/middleware"
import { OpenAiModel } from "@artana/model-openai"
import { SqliteStore } from "@artana/store-sqlite"
import { runMain } from "./runMain.js"

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 0.05 })

const answer = "Write to ann@example.com: the transfer of $250 from acc-1 to acc-2 is ready, and the balance covers it."

/** Answers, then waits for a person's yes before the answer is sent on. */
export const answerAndConfirm: Workflow.Workflow<string, string, unknown> = Artana.workflow({
  name: "answer-and-confirm",
  input: Schema.String,
  output: Schema.String,
  run: async (question, ctx) => {
    const reply = await ctx.chat({ messages: [Chat.system("Answer in one sentence."), Chat.user(question)] })
    const ok = await ctx.pauseForHuman({ reason: "send this answer?", schema: Schema.Boolean })
    return ok ? `sent: ${reply.output}` : "not sent"
  }
})

export interface Options {
  /** Where text goes (the terminal by default). */
  readonly write?: ((text: string) => void) | undefined
  /** The person's answer to the pause (asked on the terminal by default). */
  readonly confirm?: ((reason: string) => Promise<boolean>) | undefined
  readonly filename?: string | undefined
  /** Milliseconds between the scripted model's deltas (default 40: slow enough to watch). */
  readonly paceMs?: number | undefined
}

const askOnTerminal = async (reason: string): Promise<boolean> => {
  const rl = createInterface({ input: process.stdin, output: process.stdout })
  try {
    return /^y/i.test(await rl.question(`\n${reason} [y/N] `))
  } finally {
    rl.close()
  }
}

/** How the example's run went: its first execution (paused), its end, and the replies the watcher folded. */
export interface Outcome {
  readonly first: Kernel.RunResult<string>
  readonly final: Kernel.RunResult<string>
  readonly replies: ReturnType<typeof Live.replies>
}

export const main = async (options: Options = {}): Promise<Outcome> => {
  const write = options.write ?? ((text: string) => void process.stdout.write(text))
  const live = (process.env.OPENAI_API_KEY ?? "") !== "" || (process.env.OPENAI_BASE_URL ?? "") !== ""
  const pace = options.paceMs ?? 40
  const model = live
    ? OpenAiModel.layerConfig({ stream: Config.succeed(true) })
    : ScriptedModel.layer([ScriptedModel.text(answer, { deltas: 16, beforeDelta: () => Effect.sleep(pace) })], { model: "gpt-4o-mini" })
  const filename = options.filename ?? join(mkdtempSync(join(tmpdir(), "artana-live-")), "artana.db")
  const artana = Artana.create({
    store: SqliteStore.layer({ filename }),
    model,
    workflows: [answerAndConfirm],
    middleware: [Pii.middleware({ scrubReplies: true })]
  })
  try {
    const run = { tenantId: tenant.tenantId, runId: `live-${Date.now()}` }
    write(`model: ${live ? "OpenAI (SSE)" : "ScriptedModel (offline; set OPENAI_API_KEY to use OpenAI)"}\n\n`)
    const started = artana.run(answerAndConfirm, { runId: run.runId, tenant, input: "Is my transfer ready?" })
    // The watcher: prints the answer as it comes, and drops the connection after a few deltas; then reconnects at
    // the last offset it saw, and gets exactly the rest: no gap, nothing twice.
    const replies = Live.replies()
    let last: string | undefined
    let deltas = 0
    let paused: Live.LiveEvent | undefined
    for (const attempt of ["first", "reconnected"] as const) {
      if (attempt === "reconnected") write(`  [disconnected at offset ${last}; reconnecting]  `)
      for await (const e of artana.live(run, { after: last, waitForStart: true })) {
        last = e.offset
        replies.push(e)
        if (e._tag === "TextDelta") write(e.text)
        if (e._tag === "ModelCompleted") write(`\n\nlogged reply (the truth the deltas previewed): ${e.message.content}\n`)
        if (e._tag === "Paused" || e._tag === "Completed" || e._tag === "Failed") paused = e
        if (paused !== undefined || (e._tag === "TextDelta" && ++deltas === 5 && attempt === "first")) break
      }
      if (paused !== undefined) break
    }
    const first = await started
    if (paused?._tag !== "Paused" || first.status !== "paused") return { first, final: first, replies }
    const yes = await (options.confirm ?? askOnTerminal)(paused.reason)
    const final = await artana.resume({ ...run, response: yes, workflow: answerAndConfirm })
    // The same stream, from the pause on: the decision and the run's end.
    for await (const e of artana.live(run, { after: paused.offset })) if (e._tag === "Completed") write(`\nrun completed: ${JSON.stringify(e.output)}\n`)
    return { first, final, replies }
  } finally {
    await artana.close()
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) void runMain(main)
