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

describe("artana mcp pin", () => {
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
        inputSchema: { type: "object", properties: { path: { type: "string", minLength: 1 } }, required: ["path"] }
      }))

      // The server rewrote a description: pinning again names the tool that changed.
      const pinnedText = written.replace(JSON.stringify(calls), `${JSON.stringify(calls)}, "(new wording)"`)
      fs.writeFileSync(file, pinnedText)
      const second = yield* artana(["mcp", "pin", "--policy", file], { cwd })
      expect(second.code).toBe(0)
      expect(second.stdout).toContain("pinned 7 tools of notes (changed: read_note)")
      // The server was asked for its list only, never called.
      expect(fs.existsSync(calls)).toBe(false)
    }), { timeout: 240_000 })

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
