// `pnpm --filter @artana/examples exec tsx src/analyst-mcp.ts`: the analyst agent reading its data through an MCP server.
//   - a small filesystem MCP server (src/files-server.ts, on the official SDK) serves a folder of sales files read-only;
//     Artana starts it as a child process over stdio and ends it with the layer
//   - the agent gets the server's tools for the run (`McpTools.agentExtension()`): listed once, logged in the run,
//     governed like any tool (the capability files:read, arguments validated before the call, two-phase log)
//   - then the run is replayed with the server gone (its command does not exist): the log is enough
// Offline it plays a recorded conversation on the scripted model and says so; with OPENAI_API_KEY (or OPENAI_BASE_URL
// for a compatible server) the same agent runs on OpenAI.
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Layer, Schema } from "effect"
import { type Event, EventStore, Kernel, Middleware, Tenant, ToolRegistry } from "@artana/core"
import type { ScriptedModel } from "@artana/core/testing"
import { AutonomousAgent, MemoryStore } from "@artana/agent"
import { McpServers, McpTools } from "@artana/mcp"
import { CapabilityGuard, Pii } from "@artana/middleware"
import { SqliteStore } from "@artana/store-sqlite"
import { computeGrowth } from "./analyst.js"
import { chooseModel } from "./model.js"
import { runMain } from "./runMain.js"

export const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: ["files:read"], budgetUsdLimit: 1 })

// --- the shared folder and the server that serves it ---------------------------------------------------------------

/** The files the server shares: quarterly revenue per region, EUR. */
export const FILES: Readonly<Record<string, string>> = {
  "README.md": "Sales exports. One CSV per region and year: quarter,revenue_eur.\n",
  "sales/emea-2024.csv": "quarter,revenue_eur\nQ1,41200000\nQ2,43900000\nQ3,47100000\nQ4,52300000\n",
  "sales/apac-2024.csv": "quarter,revenue_eur\nQ1,22800000\nQ2,22100000\nQ3,23400000\nQ4,24000000\n"
}

const writeFolder = (folder: string): void => {
  for (const [file, text] of Object.entries(FILES)) {
    mkdirSync(dirname(join(folder, file)), { recursive: true })
    writeFileSync(join(folder, file), text)
  }
}

const examplesDir = fileURLToPath(new URL("..", import.meta.url))

/** The server as MCP config: a child process serving `folder`; its tools need `files:read`. */
export const filesServer = (folder: string, command: string = process.execPath) => ({
  name: "files",
  command,
  args: ["--import", "tsx", join(examplesDir, "src/files-server.ts"), folder],
  cwd: examplesDir,
  capability: "files:read"
})

// --- the agent ---------------------------------------------------------------------------------------------------

export const FileReport = Schema.Struct({
  headline: Schema.String,
  emeaGrowthPct: Schema.Number,
  apacGrowthPct: Schema.Number,
  sources: Schema.Array(Schema.String)
})

export const analyst = AutonomousAgent.make({
  name: "file-analyst",
  instructions: "You are a sales analyst. Read the figures from the shared files (the files.* tools) only, and name the " +
    "files you used as sources.",
  tools: [computeGrowth],
  memory: false,
  extensions: [McpTools.agentExtension()],
  maxTurns: 10
})

export const TASK = "How did EMEA revenue develop over 2024, compared with APAC?"

// --- the recorded conversation (offline) ----------------------------------------------------------------------

const EMEA = [41_200_000, 43_900_000, 47_100_000, 52_300_000]
const APAC = [22_800_000, 22_100_000, 23_400_000, 24_000_000]

export const conversation: ReadonlyArray<{ readonly calls: ReadonlyArray<{ readonly name: string; readonly arguments: unknown }> } | { readonly text: string }> = [
  { calls: [{ name: "files.list_files", arguments: {} }] },
  { calls: [{ name: "files.read_file", arguments: { path: "sales/emea-2024.csv" } }, { name: "files.read_file", arguments: { path: "sales/apac-2024.csv" } }] },
  { calls: [{ name: "compute_growth", arguments: { values: EMEA } }, { name: "compute_growth", arguments: { values: APAC } }] },
  {
    text: JSON.stringify({
      headline: "EMEA grew 26.9% over 2024 (EUR 41.2M to 52.3M a quarter); APAC 5.3% (EUR 22.8M to 24.0M).",
      emeaGrowthPct: 26.9,
      apacGrowthPct: 5.3,
      sources: ["sales/emea-2024.csv", "sales/apac-2024.csv"]
    })
  }
]

export const script: ReadonlyArray<ScriptedModel.Reply> = conversation.map((t) =>
  "text" in t ? { content: t.text, costUsd: 0.0004 } : { content: null, toolCalls: t.calls, costUsd: 0.0004 }
)

// --- running it ------------------------------------------------------------------------------------------------

const governed = Middleware.layer([Pii.middleware(), CapabilityGuard.middleware()])

/** The kernel over SQLite at `filename`, the model, and the MCP servers of `servers`. */
const layer = (filename: string, servers: unknown) =>
  Layer.provideMerge(
    Kernel.layer(),
    Layer.mergeAll(ToolRegistry.layer([]), governed, Layer.orDie(chooseModel(script).layer), MemoryStore.layerMemory, McpServers.layer(servers))
  ).pipe(Layer.provideMerge(SqliteStore.layer({ filename })), Layer.orDie)

export interface McpAnalystResult {
  readonly runId: string
  readonly filename: string
  readonly status: string
  readonly report: typeof FileReport.Type | undefined
  readonly verified: boolean
  /** The replay, with the server's command gone, gave the same result. */
  readonly replayedSame: boolean
  readonly events: ReadonlyArray<Event.Event>
}

/** `dir`: where the shared folder and the store go (default a new temp folder, kept for a look after the run). */
export const main = (options: { readonly dir?: string; readonly log?: (line: string) => void } = {}): Promise<McpAnalystResult> => {
  const log = options.log ?? ((line: string) => console.log(line))
  const work = options.dir ?? mkdtempSync(join(tmpdir(), "artana-analyst-mcp-"))
  const folder = join(work, "shared")
  writeFolder(folder)
  const filename = join(work, "artana.db")
  const runId = `analyst-mcp-${Date.now()}`
  const run = Effect.gen(function*() {
    log("Artana analyst agent over an MCP server")
    log(`  model:  ${chooseModel(script).label}`)
    log(`  store:  ${filename} (SQLite)`)
    log(`  server: files (src/files-server.ts, stdio, read-only) sharing ${folder}`)
    log(`\ntask: ${TASK}\n`)
    const result = yield* analyst.run({ runId, tenant, prompt: TASK, outputSchema: FileReport })
    const events = yield* Effect.flatMap(EventStore.EventStore, (s) => s.readEvents(tenant.tenantId, runId))
    const verified = (yield* Effect.flatMap(Kernel.Kernel, (k) => k.verify({ tenantId: tenant.tenantId, runId }))).ok
    for (const e of events) {
      const p = e.payload
      if (p._tag === "StepCompleted" && p.name === "mcp.tools") log(`  ${e.stepKey.padEnd(18)} the server's tools, listed once and logged`)
      if (p._tag === "ToolCompleted") log(`  ${e.stepKey.padEnd(18)} ${p.tool} -> ${JSON.stringify(p.result).slice(0, 80)}`)
    }
    return { result, events, verified }
  })
  const program = Effect.gen(function*() {
    const { events, result, verified } = yield* Effect.scoped(Effect.provide(run, layer(filename, { servers: [filesServer(folder)] })))
    // The server is gone (its layer closed, and its command now names nothing): the replay reads everything from the log.
    const gone = { servers: [filesServer(folder, join(work, "no-such-server"))] }
    const replayed = yield* Effect.scoped(Effect.provide(analyst.replay({ tenantId: tenant.tenantId, runId, outputSchema: FileReport }), layer(filename, gone)))
    const completed = result.status === "completed" ? result.output : undefined
    const replayedSame = JSON.stringify(replayed) === JSON.stringify(result)
    log(`\n${result.status}: ${completed?.turns ?? 0} turns, $${(completed?.costUsd ?? 0).toFixed(6)}`)
    if (completed !== undefined) log(`report: ${completed.output.headline}\n        sources: ${completed.output.sources.join(", ")}`)
    log(`verify: ${verified ? "hash chain intact" : "BROKEN"}, ${events.length} events`)
    log(`replay without the server: ${replayedSame ? "the same result" : "DIFFERENT"}`)
    return { runId, filename, status: result.status, report: completed?.output, verified, replayedSame, events } satisfies McpAnalystResult
  })
  return Effect.runPromise(program)
}

const isMain = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]
if (isMain) await runMain(main)
