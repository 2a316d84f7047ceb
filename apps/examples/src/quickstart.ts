// `pnpm demo`: the quick start, offline, on the embedded default (SQLite).
//   1. A tenant's transfer run chats with the model (a tool call behind a capability, a typed decision).
//   2. The model declines, so the run pauses for a human and this process ends its part.
//   3. A second process resumes the run with the human's answer; the run completes.
//   4. The hash chain is verified and the log printed.
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
}

export const main = async (options: { readonly filename?: string; readonly log?: (line: string) => void } = {}): Promise<QuickstartResult> => {
  const log = options.log ?? ((line: string) => console.log(line))
  const filename = options.filename ?? join(mkdtempSync(join(tmpdir(), "artana-demo-")), "artana.db")
  const runId = `transfer-${Date.now()}`
  log("Artana quick start")
  log(`  model:    ${chooseModel(script).label}`)
  log(`  governed: PII scrubber -> quota ($ budget) -> capability guard`)
  log(`  store:    ${filename} (SQLite, WAL, synchronous=FULL)`)
  log(`  tenant:   ${tenant.tenantId}, capabilities [${tenant.capabilities.join(", ")}], budget $${tenant.budgetUsdLimit}`)

  const artana = client(filename, script)
  try {
    log(`\n1. run ${runId}: transfer $5000 from acc-1 to acc-2`)
    const first = await artana.run(transfer, { runId, tenant, input: { from: "acc-1", to: "acc-2", amountUsd: 5000 } })
    if (first.status !== "paused") throw new Error(`expected the run to pause, got ${first.status}`)
    log(`2. paused for a human: "${first.reason}" (ticket ${first.ticket})`)
  } finally {
    await artana.close()
  }

  const child = spawnSync(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "--resume", filename, runId], {
    encoding: "utf8",
    cwd: fileURLToPath(new URL("..", import.meta.url))
  })
  if (child.status !== 0) throw new Error(`the resuming process failed (exit ${child.status}): ${child.stderr}`)
  const resumed: { status: string; output?: string } = JSON.parse(child.stdout.trim().split("\n").pop() ?? "{}")
  log(`3. resumed in a second process (pid ${child.pid}; this one is ${process.pid}) with { approve: true, approver: "ann@acme.example" }`)
  log(`   -> ${resumed.status}: ${resumed.output ?? ""}`)

  const reader = client(filename, [])
  try {
    const report = await reader.verify({ tenantId: tenant.tenantId, runId })
    const run = await reader.getRun({ tenantId: tenant.tenantId, runId })
    log(`4. verify: ${report.ok ? "hash chain intact" : `BROKEN at seq ${report.firstBrokenSeq}`}, ${report.events} events, spent $${run.costUsd.toFixed(6)}\n`)
    const events = await reader.readEvents({ tenantId: tenant.tenantId, runId })
    const rows = events.map((e) => [String(e.seq), e.stepKey, e.type, describe(e).slice(0, 96)])
    const widths = [3, 8, 15].map((w, i) => Math.max(w, ...rows.map((r) => r[i]!.length)))
    log(`   ${"seq".padStart(widths[0]!)}  ${"step".padEnd(widths[1]!)}  ${"event".padEnd(widths[2]!)}  detail`)
    for (const r of rows) log(`   ${r[0]!.padStart(widths[0]!)}  ${r[1]!.padEnd(widths[1]!)}  ${r[2]!.padEnd(widths[2]!)}  ${r[3]}`)
    return { runId, filename, status: resumed.status, output: resumed.output, verified: report.ok, events }
  } finally {
    await reader.close()
  }
}

const isMain = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]
if (isMain) {
  const [flag, filename, runId] = process.argv.slice(2)
  if (flag === "--resume" && filename !== undefined && runId !== undefined) await resumeInThisProcess(filename, runId)
  else await main()
}
