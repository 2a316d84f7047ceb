// An AutonomousAgent given a run's MCP tools (`McpTools.agentExtension()`): listed once per run from a real stdio
// server, logged, offered and called governed; a replay needs no server.
import { describe, expect, it } from "vitest"
import { Effect, Layer } from "effect"
import { Kernel, type ModelPort, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { AutonomousAgent, MemoryStore } from "@artana/agent"
import { McpServers, McpTools } from "@artana/mcp"
import { SqliteStore } from "@artana/store-sqlite"
import * as path from "node:path"
import { callsIn } from "./fixtures/server.js"
import { payloads, stdioServer, tempFolder, tenant } from "./helpers.js"

const dir = tempFolder("agent")

const clerk = AutonomousAgent.make({ name: "clerk", instructions: "Read notes when asked.", memory: false, extensions: [McpTools.agentExtension()] })

const withAgent = <A, E>(db: string, config: unknown, script: ReadonlyArray<ScriptedModel.Reply>, program: Effect.Effect<A, E, Kernel.Kernel | ScriptedModel.ScriptedModel | MemoryStore.MemoryStore | ModelPort.ModelPort>) =>
  Effect.runPromise(Effect.scoped(Effect.provide(program, Kernel.layer().pipe(
    Layer.provideMerge(Layer.mergeAll(SqliteStore.layer({ filename: db }), ScriptedModel.layer(script), ToolRegistry.layer([]), MemoryStore.layerMemory, McpServers.layer(config)))
  ))))

describe("AutonomousAgent with a run's MCP tools", () => {
  it("lists the server's tools once per run (logged), offers and calls them; the replay starts no server", async () => {
    const db = path.join(dir, "agent.db")
    const calls = path.join(dir, "calls.jsonl")
    const script = [ScriptedModel.toolCall("notes.read_note", { path: "todo.txt" }), ScriptedModel.text("todo.txt says: contents of todo.txt")]
    const run = await withAgent(db, { servers: [stdioServer(calls)] }, script, Effect.gen(function*() {
      const result = yield* clerk.run({ runId: "clerk-1", tenant: tenant(), prompt: "What does todo.txt say?" })
      const kernel = yield* Kernel.Kernel
      const events = payloads(yield* kernel.readEvents({ tenantId: "acme", runId: "clerk-1" }))
      const offered = (yield* ScriptedModel.ScriptedModel).requests()[0]!.tools.map((t) => t.name)
      return { result, events, offered }
    }))
    expect(run.result).toMatchObject({ status: "completed", output: { output: "todo.txt says: contents of todo.txt" } })
    expect(run.offered).toEqual(["notes.read_note", "notes.write_note", "notes.fail", "notes.hang", "notes.die", "notes.picture"])
    expect(run.events.filter((p) => p._tag === "StepCompleted").map((p) => p._tag === "StepCompleted" && p.name)).toEqual(["mcp.tools"])
    expect(run.events.filter((p) => p._tag === "ToolCompleted")).toEqual([
      { _tag: "ToolCompleted", tool: "notes.read_note", result: { content: [{ type: "text", text: "contents of todo.txt" }] } }
    ])
    expect(callsIn(calls)).toEqual([{ tool: "read_note", args: { path: "todo.txt" } }])

    // The server's command no longer exists: the replay reads the tool list and the call from the log.
    const gone = { servers: [stdioServer(calls, { command: path.join(dir, "no-such-server") })] }
    const replayed = await withAgent(db, gone, [], clerk.replay({ tenantId: "acme", runId: "clerk-1" }))
    expect(replayed).toEqual(run.result)
    expect(callsIn(calls)).toHaveLength(1)
  }, 300_000)
})
