// `artana mcp pin`: the real command against a real MCP server process (the @artana/mcp tests' stdio server),
// writing fingerprints into the policy's mcp: section with its comments kept; then a changed tool shows as changed.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { McpConfig, McpTools } from "@artana/mcp"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { artana, cleanup, tempDir } from "./helpers.js"

afterAll(cleanup)

const mcpDir = fileURLToPath(new URL("../../mcp", import.meta.url))
const server = path.join(mcpDir, "test/fixtures/stdio.ts")

const policy = (calls: string, suffix: string) => `# reviewed by ops
default: deny
tools:
  fs.read: { allow: true, paths: ["workspace/**"] }
mcp:
  servers:
    - name: notes   # the notes server
      command: ${JSON.stringify(process.execPath)}
      args: ["--import", "tsx", ${JSON.stringify(server)}, ${JSON.stringify(calls)}${suffix === "" ? "" : `, ${JSON.stringify(suffix)}`}]
      cwd: ${JSON.stringify(mcpDir)}
`

describe("MCP servers in the CLI: artana mcp pin, and plans that call MCP tools", () => {
  it.effect("writes every tool's fingerprint into the policy, keeps its comments, and reports what changed", () =>
    Effect.gen(function*() {
      const cwd = tempDir()
      const file = path.join(cwd, "policy.yaml")
      const calls = path.join(cwd, "calls.jsonl")
      fs.writeFileSync(file, policy(calls, ""))

      const first = yield* artana(["mcp", "pin", "--policy", file, "--format", "json"], { cwd })
      expect(first.stderr).toBe("")
      expect(first.code).toBe(0)
      expect(JSON.parse(first.stdout)).toMatchObject({ servers: [{ server: "notes", tools: 7, changed: [], removed: [] }] })
      const written = fs.readFileSync(file, "utf8")
      expect(written).toContain("# reviewed by ops")
      expect(written).toContain("# the notes server")
      const config = McpConfig.fromPolicy(written, file)
      if (config._tag === "Left" || config.right === undefined) throw new Error("the pinned policy does not decode")
      const pins = config.right.servers[0]!.pins!
      expect(pins.read_note).toBe(McpTools.fingerprint({
        name: "read_note",
        description: "Reads a note by its path",
        inputSchema: { type: "object", properties: { path: { type: "string", minLength: 1 } }, required: ["path"] },
        readOnlyHint: true
      }))

      // The server rewrote a description: pinning again names the tool that changed.
      const pinnedText = written.replace(JSON.stringify(calls), `${JSON.stringify(calls)}, "(new wording)"`)
      fs.writeFileSync(file, pinnedText)
      // Until a person pins again, a plan cannot call the changed tool: bad input saying why, and nothing runs.
      fs.writeFileSync(path.join(cwd, "plan.yaml"), "steps:\n  - tool: notes.read_note\n    args: { path: a.txt }\n")
      const withheld = yield* artana(["run", "plan.yaml", "--policy", file, "--db", path.join(cwd, "artana.db")], { cwd })
      expect(withheld.code).toBe(2)
      expect(withheld.stderr).toContain('tool "notes.read_note" is withheld: changed since it was pinned')
      const second = yield* artana(["mcp", "pin", "--policy", file], { cwd })
      expect(second.code).toBe(0)
      expect(second.stdout).toContain("pinned 7 tools of notes (changed: read_note)")
      // The server was asked for its list only, never called.
      expect(fs.existsSync(calls)).toBe(false)
    }), { timeout: 240_000 })

  it.effect("runs a plan whose steps call MCP tools, logs the tool list, and replays it with no server started", () =>
    Effect.gen(function*() {
      const cwd = tempDir()
      const file = path.join(cwd, "policy.yaml")
      const calls = path.join(cwd, "calls.jsonl")
      fs.writeFileSync(file, policy(calls, ""))
      fs.writeFileSync(path.join(cwd, "plan.yaml"), `steps:
  - id: write
    tool: notes.write_note
    args: { path: a.txt, text: hello }
  - id: read
    tool: notes.read_note
    args: { path: a.txt }
`)
      const db = path.join(cwd, "artana.db")
      const ran = yield* artana(["run", "plan.yaml", "--policy", file, "--db", db, "--run-id", "mcp-1", "--format", "json"], { cwd })
      expect(ran.stderr).toBe("")
      expect(JSON.parse(ran.stdout)).toEqual({ runId: "mcp-1", status: "completed" })
      expect(fs.readFileSync(calls, "utf8").trim().split("\n").map((l) => JSON.parse(l))).toEqual([
        { tool: "write_note", args: { path: "a.txt", text: "hello" } },
        { tool: "read_note", args: { path: "a.txt" } }
      ])
      const starts = fs.readFileSync(`${calls}.starts`, "utf8")

      const replayed = yield* artana(["replay", "mcp-1", "--db", db, "--format", "json"], { cwd })
      expect(replayed.stderr).toBe("")
      expect(JSON.parse(replayed.stdout)).toMatchObject({ runId: "mcp-1", matches: true, steps: [{ id: "write", status: "ok" }, { id: "read", status: "ok" }] })
      // No server was started for the replay, and none was called.
      expect(fs.readFileSync(`${calls}.starts`, "utf8")).toBe(starts)
      expect(fs.readFileSync(calls, "utf8").trim().split("\n")).toHaveLength(2)

      // Arguments the tool's schema refuses are bad input before anything runs.
      fs.writeFileSync(path.join(cwd, "bad.yaml"), "steps:\n  - tool: notes.write_note\n    args: { path: a.txt }\n")
      const bad = yield* artana(["run", "bad.yaml", "--policy", file, "--db", db], { cwd })
      expect(bad.code).toBe(2)
      expect(bad.stderr).toContain("text")
      expect(fs.readFileSync(calls, "utf8").trim().split("\n")).toHaveLength(2)
    }), { timeout: 240_000 })

  it.effect("a server that dies mid-step leaves it in doubt; the continued run keeps the tool list it logged", () =>
    Effect.gen(function*() {
      const cwd = tempDir()
      const file = path.join(cwd, "policy.yaml")
      const calls = path.join(cwd, "calls.jsonl")
      const db = path.join(cwd, "artana.db")
      fs.writeFileSync(file, policy(calls, ""))
      expect((yield* artana(["mcp", "pin", "--policy", file], { cwd })).code).toBe(0)
      fs.writeFileSync(path.join(cwd, "plan.yaml"), `steps:
  - id: write
    tool: notes.write_note
    args: { path: a.txt, text: hello }
  - id: boom
    tool: notes.die
    args: {}
  - id: read
    tool: notes.read_note
    args: { path: a.txt }
`)
      const first = yield* artana(["run", "plan.yaml", "--policy", file, "--db", db, "--run-id", "c1", "--format", "json"], { cwd })
      expect(first.code).toBe(8)
      expect(JSON.parse(first.stdout)).toEqual({ runId: "c1", status: "needs_reconciliation" })
      const settled = yield* artana(["reconcile", "c1", "--db", db, "--step", "boom", "--completed", "{\"content\":[]}", "--force"], { cwd })
      expect(settled.stderr).toBe("")

      // The server now describes read_note otherwise and nobody pinned it again: a new run would not get it, but
      // this run continues with the list it logged when it started.
      fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace(JSON.stringify(calls), `${JSON.stringify(calls)}, "(rewritten)"`))
      const continued = yield* artana(["run", "plan.yaml", "--policy", file, "--db", db, "--run-id", "c1", "--format", "json"], { cwd })
      expect(continued.stderr).toBe("")
      expect(JSON.parse(continued.stdout)).toEqual({ runId: "c1", status: "completed" })
      expect(fs.readFileSync(calls, "utf8").trim().split("\n").map((l) => JSON.parse(l).tool)).toEqual(["write_note", "die", "read_note"])
    }), { timeout: 300_000 })

  it.effect("a policy without MCP servers is bad input, and the file is left as it was", () =>
    Effect.gen(function*() {
      const cwd = tempDir()
      const file = path.join(cwd, "policy.yaml")
      fs.writeFileSync(file, "default: deny\ntools: {}\n")
      const out = yield* artana(["mcp", "pin", "--policy", file], { cwd })
      expect(out.code).toBe(2)
      expect(out.stderr).toContain("the policy has no MCP servers")
      expect(fs.readFileSync(file, "utf8")).toBe("default: deny\ntools: {}\n")
    }), { timeout: 120_000 })
})
