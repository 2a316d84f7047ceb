// Reading MCP tool lists needs no MCP SDK: a program that imports @artana/mcp to decode a logged list (a replay,
// `artana show-run`, `artana report`) does not load the SDK (and its zod schemas, ~10 MB of heap); it is loaded
// when a server is first connected. Seen from a real child process with a module hook that records what it loads.
import { describe, expect, it } from "vitest"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { packageDir, stdioServer, tempFolder } from "./helpers.js"

const dir = tempFolder("lazy")

describe("@artana/mcp's MCP SDK", () => {
  it("is not loaded by importing the package, decoding a logged tool list or building the servers' layer, only by connecting a server", async () => {
    const log = path.join(dir, "loaded.txt")
    const server = stdioServer(path.join(dir, "calls.jsonl"))
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        ["--import", "./test/fixtures/loadedModules.mjs", "test/fixtures/lazySdk.mjs", JSON.stringify(server)],
        { cwd: packageDir, env: { ...process.env, LOADED_MODULES: log }, timeout: 300_000 },
        (error, _stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stderr })
      )
    })
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    const lines = fs.readFileSync(log, "utf8").split("\n")
    const layered = lines.indexOf("--- decoded and layered")
    const listed = lines.findIndex((l) => /^--- listed \d+$/.test(l))
    expect(layered).toBeGreaterThan(0)
    expect(listed).toBeGreaterThan(layered)
    const sdk = (l: string) => l.includes("/@modelcontextprotocol/sdk/") || l.includes("/zod/")
    expect(lines.slice(0, layered).some((l) => l.includes("/@artana/mcp/") || l.includes("/packages/mcp/"))).toBe(true)
    expect([...new Set(lines.slice(0, layered).filter(sdk))]).toEqual([])
    expect(lines.slice(layered, listed).some(sdk)).toBe(true)
  }, 600_000)
})
