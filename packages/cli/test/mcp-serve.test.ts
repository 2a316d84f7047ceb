// `artana mcp serve`: the policy's tools served over MCP, each call a logged, governed run; over stdio to the SDK's
// client, and over Streamable HTTP on a non-loopback address only with the printed bearer token.
import { afterAll, describe, expect, it } from "vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect } from "effect"
import { artana, artanaProcess, cleanup, tempDir } from "./helpers.js"

afterAll(cleanup)

const workspace = () => {
  const cwd = tempDir()
  fs.mkdirSync(path.join(cwd, "workspace"))
  fs.writeFileSync(path.join(cwd, "workspace/notes.txt"), "quarterly numbers")
  fs.writeFileSync(path.join(cwd, "secret.txt"), "secret")
  fs.writeFileSync(path.join(cwd, "policy.yaml"), "default: deny\ntools:\n  fs.read: { allow: true, paths: [\"workspace/**\"] }\n")
  return cwd
}

const textOf = (result: unknown): string => {
  const content = typeof result === "object" && result !== null && "content" in result && Array.isArray(result.content) ? result.content : []
  return content.map((c: { text?: string }) => c.text ?? "").join("")
}

describe("artana mcp serve", () => {
  it("serves the policy's tools over stdio; every call is a logged run the policy governs", async () => {
    const cwd = workspace()
    const db = path.join(cwd, "artana.db")
    const command = artanaProcess(["mcp", "serve", "--policy", path.join(cwd, "policy.yaml"), "--db", db])
    const client = new Client({ name: "test", version: "1.0.0" })
    await client.connect(new StdioClientTransport({ ...command, cwd, stderr: "pipe" }))
    try {
      const { tools } = await client.listTools()
      expect(tools.map((t) => t.name)).toEqual(["fs.read", "fs.write", "http.get", "shell.run"])
      const read = await client.callTool({ name: "fs.read", arguments: { path: "workspace/notes.txt" } })
      expect(read.isError).toBeUndefined()
      expect(textOf(read)).toContain("quarterly numbers")
      const denied = await client.callTool({ name: "fs.read", arguments: { path: "secret.txt" } })
      expect(denied.isError).toBe(true)
      expect(textOf(denied)).toContain("outside the allowed paths")
    } finally {
      await client.close()
    }
    // Both calls are runs in the store: one completed, one failed (denied).
    const listed = await Effect.runPromise(artana(["list-runs", "--db", db, "--format", "json"], { cwd }))
    const runs: Array<{ status: string; workflow: string }> = JSON.parse(listed.stdout).runs
    expect(runs.map((r) => [r.workflow, r.status]).sort()).toEqual([["artana.callTool", "completed"], ["artana.callTool", "failed"]])
  }, 240_000)

  it("over HTTP on a non-loopback address: 401 without the printed token, nothing run; the token works", async () => {
    const cwd = workspace()
    const db = path.join(cwd, "artana.db")
    const command = artanaProcess(["mcp", "serve", "--policy", path.join(cwd, "policy.yaml"), "--db", db, "--http", "0.0.0.0:0"])
    const child = spawn(command.command, command.args, { cwd, env: command.env, stdio: ["ignore", "ignore", "pipe"] })
    try {
      let stderr = ""
      const { port, token } = await new Promise<{ port: string; token: string }>((resolve, reject) => {
        child.stderr.on("data", (chunk: Buffer) => {
          stderr += chunk.toString("utf8")
          const port = stderr.match(/:(\d+)\/mcp/)?.[1]
          const token = stderr.match(/bearer token \(shown once, kept only hashed\): (\S+)/)?.[1]
          if (port !== undefined && token !== undefined) resolve({ port, token })
        })
        child.on("exit", (code) => reject(new Error(`serve exited ${code}: ${stderr}`)))
      })
      const url = new URL(`http://127.0.0.1:${port}/mcp`)
      const anonymous = await fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "fs.read", arguments: { path: "workspace/notes.txt" } } }) })
      expect(anonymous.status).toBe(401)
      const wrong = new Client({ name: "test", version: "1.0.0" })
      await expect(wrong.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: "Bearer nope" } } }))).rejects.toThrow()

      const client = new Client({ name: "test", version: "1.0.0" })
      await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } }))
      const read = await client.callTool({ name: "fs.read", arguments: { path: "workspace/notes.txt" } })
      expect(textOf(read)).toContain("quarterly numbers")
      await client.close()
    } finally {
      const exited = new Promise((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.on("exit", resolve)))
      child.kill("SIGTERM")
      await exited
    }
    // Only the authorized call ran.
    const listed = await Effect.runPromise(artana(["list-runs", "--db", db, "--format", "json"], { cwd }))
    expect(JSON.parse(listed.stdout).runs).toHaveLength(1)
  }, 240_000)
})
