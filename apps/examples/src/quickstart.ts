// `pnpm demo`: the quick start, offline, on the embedded default (SQLite).
//   1. A tenant's transfer run chats with the model (a tool call behind a capability, a typed decision).
//   2. The model decides. When it declines, the run pauses for a human and this process ends its part, and
//   3. a second process resumes the run with the human's answer; the run completes. When it approves (a real model
//      may), the run completes at once.
//   4. The hash chain is verified and the log printed, with the `artana show-run` that inspects the run.
import { spawnSync } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Artana, type Event } from "@artana/core"
import type { ScriptedModel } from "@artana/core/testing"
import { CapabilityGuard, Pii } from "@artana/middleware"
import { SqliteStore } from "@artana/store-sqlite"
import { chooseModel } from "./model.js"
import { runMain } from "./runMain.js"
import { getBalance, script, tenant, transfer, transferFunds } from "./transfer.js"

/** The governed chain, in order: scrub PII, guard capabilities (the kernel prices every call and holds the budget). */
const client = (filename: string, replies: ReadonlyArray<ScriptedModel.Reply>) =>
  Artana.create({
    store: SqliteStore.layer({ filename }),
    model: chooseModel(replies).layer,
    tools: [getBalance, transferFunds],
    workflows: [transfer],
    middleware: [Pii.middleware(), CapabilityGuard.middleware()]
  })

/** Step 3, in its own process: resume the paused run with the human's answer. */
const resumeInThisProcess = async (filename: string, runId: string) => {
  // No model replies are needed: the model steps before the pause come back from the log.
  const artana = client(filename, [])
  try {
    const result = await artana.resume({ tenantId: tenant.tenantId, runId, response: { approve: true, approver: "ann@acme.example" } })
    console.log(JSON.stringify(result))
  } finally {
    await artana.close()
  }
}

const describe = (e: Event.Event): string => {
  const p = e.payload
  switch (p._tag) {
    case "RunStarted":
      return `workflow ${p.workflow}, tenant ${p.tenant.tenantId}`
    case "ModelRequested":
      return `${p.messages.length} messages, tools [${p.tools.join(", ")}]; as sent: ...${(p.messages.find((m) => m.role === "user")?.content ?? "").slice(-40)}`
    case "MiddlewareNote":
      return `${p.middleware} ${p.note} ${JSON.stringify(p.data)}`
    case "ModelCompleted":
      return p.message.toolCalls !== undefined
        ? `calls ${p.message.toolCalls.map((c) => `${c.name}(${c.arguments})`).join(", ")}`
        : `answers ${p.message.content ?? ""}`
    case "ToolRequested":
      return `${p.tool}(${p.arguments})`
    case "ToolCompleted":
      return JSON.stringify(p.result)
    case "PauseRequested":
      return p.reason
    case "HumanResponded":
      return JSON.stringify(p.payload)
    case "RunCompleted":
      return JSON.stringify(p.output)
    default:
      return ""
  }
}

export interface QuickstartResult {
  readonly runId: string
  readonly filename: string
  readonly status: string
  readonly output: string | undefined
  readonly verified: boolean
  readonly events: ReadonlyArray<Event.Event>
  /** The `artana show-run` command that inspects the run. */
  readonly inspect: string
}

export interface QuickstartOptions {
  readonly filename?: string
  readonly log?: (line: string) => void
  /** What the scripted model answers, offline (default: `script`, which declines). */
  readonly replies?: ReadonlyArray<ScriptedModel.Reply>
}

export const main = async (options: QuickstartOptions = {}): Promise<QuickstartResult> => {
  const log = options.log ?? ((line: string) => console.log(line))
  const filename = options.filename ?? join(mkdtempSync(join(tmpdir(), "artana-demo-")), "artana.db")
  const runId = `transfer-${Date.now()}`
  log("Artana quick start")
  log(`  model:    ${chooseModel(script).label}`)
  log(`  governed: PII scrubber -> quota ($ budget) -> capability guard`)
  log(`  store:    ${filename} (SQLite, WAL, synchronous=FULL)`)
  log(`  tenant:   ${tenant.tenantId}, capabilities [${tenant.capabilities.join(", ")}], budget $${tenant.budgetUsdLimit}`)

  const artana = client(filename, options.replies ?? script)
  let paused = false
  try {
    log(`\n1. run ${runId}: transfer $5000 from acc-1 to acc-2`)
    const first = await artana.run(transfer, { runId, tenant, input: { from: "acc-1", to: "acc-2", amountUsd: 5000 } })
    if (first.status === "paused") {
      paused = true
      log(`2. paused for a human: "${first.reason}" (ticket ${first.ticket})`)
    } else {
      // A model may approve: nothing waits for a person then, and the run is already complete.
      log(`2. ${first.status}: ${first.status === "completed" ? first.output : ""} (no human needed)`)
    }
  } finally {
    await artana.close()
  }

  let outcome: { status: string; output?: string } = { status: "completed" }
  if (paused) {
    const child = spawnSync(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "--resume", filename, runId], {
      encoding: "utf8",
      cwd: fileURLToPath(new URL("..", import.meta.url))
    })
    if (child.status !== 0) throw new Error(`the resuming process failed (exit ${child.status}): ${child.stderr}`)
    outcome = JSON.parse(child.stdout.trim().split("\n").pop() ?? "{}")
    log(`3. resumed in a second process (pid ${child.pid}; this one is ${process.pid}) with { approve: true, approver: "ann@acme.example" }`)
    log(`   -> ${outcome.status}: ${outcome.output ?? ""}`)
  }

  const reader = client(filename, [])
  try {
    const report = await reader.verify({ tenantId: tenant.tenantId, runId })
    const run = await reader.getRun({ tenantId: tenant.tenantId, runId })
    if (!paused) outcome = { status: run.status }
    log(`4. verify: ${report.ok ? "hash chain intact" : `BROKEN at seq ${report.firstBrokenSeq}`}, ${report.events} events, spent $${run.costUsd.toFixed(6)}\n`)
    const events = await reader.readEvents({ tenantId: tenant.tenantId, runId })
    const rows = events.map((e) => [String(e.seq), e.stepKey, e.type, describe(e).slice(0, 96)])
    const widths = [3, 8, 15].map((w, i) => Math.max(w, ...rows.map((r) => r[i]!.length)))
    log(`   ${"seq".padStart(widths[0]!)}  ${"step".padEnd(widths[1]!)}  ${"event".padEnd(widths[2]!)}  detail`)
    for (const r of rows) log(`   ${r[0]!.padStart(widths[0]!)}  ${r[1]!.padEnd(widths[1]!)}  ${r[2]!.padEnd(widths[2]!)}  ${r[3]}`)
    const completed = [...events].reverse().find((e) => e.payload._tag === "RunCompleted")?.payload
    const output = outcome.output ?? (completed?._tag === "RunCompleted" && typeof completed.output === "string" ? completed.output : undefined)
    const inspect = showRunCommand(runId, filename)
    log("\nInspect the run with the artana CLI (in this repository, `pnpm artana` runs it):")
    log(`  ${inspect}`)
    return { runId, filename, status: outcome.status, output, verified: report.ok, events, inspect }
  } finally {
    await reader.close()
  }
}

/** The `artana show-run` that shows this run: its record, lineage and events. */
export const showRunCommand = (runId: string, filename: string, tenantId: string = tenant.tenantId): string =>
  `artana show-run ${runId} --tenant ${tenantId} --db '${filename.replace(/'/g, "'\\''")}'`

const isMain = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]
if (isMain) {
  const [flag, filename, runId] = process.argv.slice(2)
  if (flag === "--resume" && filename !== undefined && runId !== undefined) await runMain(() => resumeInThisProcess(filename, runId))
  else await runMain(main)
}
