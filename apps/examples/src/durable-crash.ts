// A durable workflow that crashes on purpose and resumes in a new process without repeating a side effect.
//   pnpm --filter @artana/examples exec tsx src/durable-crash.ts
// The workflow writes three report lines through an idempotent tool. The first process is SIGKILLed right
// after the second line's side effect, before its completion reached the log; the second process replays
// the log, re-runs the in-doubt call with the same idempotency key (the tool skips a key it has written),
// and finishes. The file ends with each line exactly once.
import { spawnSync } from "node:child_process"
import { appendFileSync, existsSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Layer, Schema } from "effect"
import { Kernel, Middleware, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { CapabilityGuard, Pii } from "@artana/middleware"
import { SqliteStore } from "@artana/store-sqlite"
import { runMain } from "./runMain.js"

const tenant = Tenant.TenantContext.make({ tenantId: "ops", capabilities: ["reports:write"], budgetUsdLimit: 0 })

const appendLine = (file: string, crashAfter: number | undefined) =>
  Tool.make({
    name: "append_line",
    description: "Appends a line to the report; a line whose idempotency key is already written is skipped",
    parameters: Schema.Struct({ index: Schema.Int, text: Schema.String }),
    requiresCapability: "reports:write",
    idempotent: true,
    handler: ({ index, text }, ctx) =>
      Effect.sync(() => {
        const written = existsSync(file) ? readFileSync(file, "utf8") : ""
        if (!written.includes(`[${ctx.idempotencyKey}]`)) appendFileSync(file, `${text} [${ctx.idempotencyKey}]\n`)
        // The crash: after the side effect, before ToolCompleted is written.
        if (index === crashAfter) process.kill(process.pid, "SIGKILL")
        return { index }
      })
  })

const report = (tool: ReturnType<typeof appendLine>) =>
  Workflow.make({
    name: "nightly-report",
    input: Schema.Struct({ lines: Schema.Array(Schema.String) }),
    output: Schema.Struct({ written: Schema.Int, startedAt: Schema.Number }),
    run: ({ lines }, ctx) =>
      Effect.gen(function*() {
        const startedAt = yield* ctx.now()
        for (const [index, text] of lines.entries()) yield* ctx.tool(tool, { index, text })
        return { written: lines.length, startedAt }
      })
  })

/** One process's part: execute (or continue) the run. */
const runInThisProcess = (db: string, file: string, runId: string, crashAfter: number | undefined) => {
  const tool = appendLine(file, crashAfter)
  const layer = Layer.provideMerge(
    Kernel.layer(),
    Layer.mergeAll(SqliteStore.layer({ filename: db }), ScriptedModel.layer([]), ToolRegistry.layer([tool]), Middleware.layer([Pii.middleware(), CapabilityGuard.middleware()]))
  )
  return Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    const result = yield* kernel.execute(report(tool), { runId, tenant, input: { lines: ["revenue: 1.2M", "churn: 2.1%", "nps: 61"] } })
    const verify = yield* kernel.verify({ tenantId: tenant.tenantId, runId })
    return { result, verified: verify.ok, events: verify.events }
  }).pipe(Effect.provide(layer), Effect.runPromise)
}

export const main = async (options: { readonly log?: (line: string) => void; readonly dir?: string } = {}) => {
  const log = options.log ?? ((line: string) => console.log(line))
  // The store and the report stay after the example, for a look at them; tests give a directory they remove.
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), "artana-crash-"))
  const db = join(dir, "artana.db")
  const file = join(dir, "report.txt")
  const runId = "nightly-report-1"
  const child = (...args: Array<string>) =>
    spawnSync(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "--child", db, file, runId, ...args], { encoding: "utf8", cwd: fileURLToPath(new URL("..", import.meta.url)) })

  log(`durable crash example (offline; store ${db})`)
  const first = child("--crash-after", "1")
  log(`1. first process: killed by ${first.signal ?? `exit ${first.status}`} after writing line 2, before logging its completion`)
  if (first.signal !== "SIGKILL") throw new Error(`expected a SIGKILL, got ${first.signal ?? first.status}: ${first.stderr}`)
  const second = child()
  if (second.status !== 0) throw new Error(`the second process failed: ${second.stderr}`)
  const outcome: { result: { status: string; output: { written: number } }; verified: boolean; events: number } = JSON.parse(
    second.stdout.trim().split("\n").pop() ?? "{}"
  )
  log(`2. second process: ${outcome.result.status}, ${outcome.result.output.written} lines, log ${outcome.verified ? "verified" : "BROKEN"} (${outcome.events} events)`)
  const lines = readFileSync(file, "utf8").trim().split("\n")
  log(`3. report.txt (${lines.length} lines, each once):`)
  for (const line of lines) log(`   ${line}`)
  return { lines, outcome }
}

const isMain = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]
if (isMain) {
  const args = process.argv.slice(2)
  if (args[0] === "--child") {
    const [, db, file, runId, flag, after] = args
    const out = await runInThisProcess(db!, file!, runId!, flag === "--crash-after" ? Number(after) : undefined)
    console.log(JSON.stringify(out))
  } else {
    await runMain(main)
  }
}
