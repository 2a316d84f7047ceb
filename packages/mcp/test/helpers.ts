// What the tests share: temp folders, the stdio server's command, and a kernel with the scripted model, a real
// SQLite store and the MCP servers, running a small agent workflow that offers the run's MCP tools to the model.
import { type Event, Kernel, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { McpServers, McpTools } from "@artana/mcp"
import { SqliteStore } from "@artana/store-sqlite"
import { ConfigProvider, Effect, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll } from "vitest"

export const packageDir = fileURLToPath(new URL("..", import.meta.url))

/** A new folder under the system's temp folder, removed after the file's tests. */
export const tempFolder = (name: string): string => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `artana-mcp-${name}-`)))
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** The stdio test server as a config entry: a real child process speaking MCP on its stdin and stdout. */
export const stdioServer = (callsFile: string, over: Record<string, unknown> = {}, descriptionSuffix?: string) => ({
  name: "notes",
  command: process.execPath,
  args: ["--import", "tsx", path.join(packageDir, "test/fixtures/stdio.ts"), callsFile, ...(descriptionSuffix === undefined ? [] : [descriptionSuffix])],
  cwd: packageDir,
  ...over
})

export const tenant = (capabilities: ReadonlyArray<string> = ["mcp:notes"]) =>
  Tenant.TenantContext.make({ tenantId: "acme", capabilities: [...capabilities], budgetUsdLimit: 1 })

/** An agent: the run's MCP tools (listed once, logged), offered to one chat. */
export const agent = Workflow.make({
  name: "mcp-agent",
  input: Schema.String,
  output: Schema.Struct({ answer: Schema.String, withheld: Schema.Array(Schema.String) }),
  run: (prompt, ctx) =>
    Effect.gen(function*() {
      const mcp = yield* McpTools.load(ctx)
      const chat = yield* ctx.chat({ prompt, tools: mcp.tools, maxTurns: 4 })
      return { answer: chat.output, withheld: mcp.withheld.map((w) => w.tool) }
    })
})

export interface Setup {
  readonly db: string
  readonly config: unknown
  readonly script: ReadonlyArray<ScriptedModel.Reply>
  readonly env?: Record<string, string> | undefined
  readonly options?: McpServers.Options | undefined
}

/** The kernel of a test: SQLite at `db`, the scripted model, no registered tools, the MCP servers of `config`. */
const layer = (setup: Setup) =>
  Kernel.layer({ workflows: [agent] }).pipe(
    Layer.provideMerge(Layer.mergeAll(
      SqliteStore.layer({ filename: setup.db }),
      ScriptedModel.layer(setup.script),
      ToolRegistry.layer([]),
      McpServers.layer(setup.config, setup.options)
    )),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(setup.env ?? {})))))
  )

/** Runs `program` with the test's kernel; the servers' connections (and stdio processes) end with it. */
export const withKernel = <A, E>(setup: Setup, program: Effect.Effect<A, E, Kernel.Kernel | ScriptedModel.ScriptedModel>) =>
  Effect.runPromise(Effect.scoped(Effect.provide(program, layer(setup))))

export const payloads = (events: ReadonlyArray<Event.Event>): Array<Event.EventPayload> => events.map((e) => e.payload)
